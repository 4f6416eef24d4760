#!/usr/bin/env python3
"""Round 6 analysis (issue 19), POST HOC: every measured GEMM-beside point of rounds 1-6 run on the engine's twin
(drain_engine.py) with the round-3..5 rule ("none") and the round-6 rule ("whole_wave"), and each point's measured
time in tile times (measured / HBM stretch / (alone / ceil(tiles / grid))) beside the predicted counts.

  /usr/bin/python3 analyse_r6_drains.py [--all] [--check FUSESIM_JSON_DIR]
  --all   print every point (default: the persistent points whose drains have late clusters)
"""
import json, math, os, re, statistics, sys
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import drain_engine as E

ROOT = E.ROOT
ROUNDS = [("r1-2", "scenarios/h200-sm-sharing-r3-train.yaml"), ("r3", "scenarios/h200-sm-sharing-r3.yaml"),
          ("r4", "scenarios/h200-sm-sharing-r4.yaml"), ("r5", "scenarios/h200-sm-sharing-r5.yaml"),
          ("r6", "scenarios/h100-sm-sharing-r6.yaml")]


KNCU = {(k["m"], k["n"], k["k"]): k["kernel"] for k in json.load(open(os.path.join(ROOT, "calibrate/data/h200/gemm_kernels_ncu.json")))
        if k["sm_target"] == 0}


def kernel_of(p, source):
    """The nvjet kernel of a case: named in its measured source (rounds 3-6) or, for rounds 1-2, in gemm_kernels_ncu.json."""
    m = re.search(r"nvjet\w+", source)
    return m.group(0) if m else KNCU[(p["m"], p["n"], p["k"])]


def cdims_of(kernel):
    """nvjet_sm90_tst_TMxTN_KxS_AxB_...: the cluster's shape (A, B)."""
    a, b = re.search(r"_tst_\d+x\d+_\d+x\d+_(\d+)x(\d+)_", kernel).groups()
    return int(a), int(b)


def points():
    machines = {}
    for rnd, f in ROUNDS:
        d = yaml.safe_load(open(os.path.join(ROOT, f)))
        hwf = d["hardware"]
        if hwf not in machines: machines[hwf] = E.Machine(hwf)
        for c in d["cases"]:
            p = c["params"]
            if p.get("neighbour", "none") == "none" or "measured" not in c: continue
            p = dict(p, kernel=kernel_of(p, c["measured"].get("source", "")))
            yield rnd, machines[hwf], c["id"], p, c["measured"]["value_us"]


def stats(errs):
    a = [abs(e) for e in errs]
    return statistics.median(a), max(a), sum(1 for x in a if x > 12)


def evaluate(rule, pts, pad=False):
    out = {}
    for rnd, M, cid, p, meas in pts:
        r = E.beside(M, p, rule=rule, cdims=cdims_of(p["kernel"]) if pad else None)
        out.setdefault(rnd, []).append((cid, r, meas, 100 * (r["pred_us"] - meas) / meas))
    return out


def main_table():
    """Every measured persistent GEMM-beside point with late CTAs (rounds 1-6): tile-time counts measured and predicted
    (measured or predicted time / HBM stretch / (alone / ceil(tiles / grid)), the engine's unpadded tiles), the
    model's quantities (tiles unpadded/padded, S, L, (tiles - L) mod S), and |error| of the rules."""
    pts = list(points())
    res = {n: evaluate(rule, pts, pad) for n, (pad, rule) in HYPOTHESES.items()}
    names = list(HYPOTHESES)
    print("id".ljust(40) + " kernel-cluster tiles(pad)  S   L  rem(pad)  measured | " + " ".join(n.split()[0].rjust(5) for n in names)
          + " | err% " + " ".join(n.split()[0].rjust(6) for n in names))
    for rnd in res[names[0]]:
        rows = list(zip(*(res[n][rnd] for n in names)))
        for row in rows:
            cid, r0, meas, _ = row[0]
            rp = row[2][1]  # H2: padded
            if not (r0["tiles"] > r0["grid"] and r0["L"] > 0): continue
            unit = r0["tile_us"] * r0["stretch"]
            rem = (r0["tiles"] - r0["L"]) % r0["S"]
            remp = (rp["tiles"] - rp["L"]) % rp["S"]
            print(f"{cid:40s} c{r0['cluster']} {r0['tiles']:4d}({rp['tiles']:4d}) {r0['S']:4d} {r0['L']:3d} {rem:4d}({remp:3d}) "
                  f"{meas / unit:8.2f} | " + " ".join(f"{x[1]['pred_us'] / unit:5.2f}" for x in row) + " | " +
                  " ".join(f"{x[3]:+6.1f}" for x in row))


# ---------------------------------------------------------------------------------------------------------------
# The candidate rules, FIXED before run 14 (device_run_r7a.sh) measured anything: each is (padded tile grid?, the
# extra delay at the first drain). "ww" = the round-6 engine's whole-wave drain wait (one tile time, tile_time(grid),
# when the first drain of a persistent grid ends with every resident CTA finding the hand-out empty at one instant).
def _ww_if(pred):
    def rule(c):
        whole = c["tiles"] > c["grid"] and c["first_exit"] == c["now"]
        return c["tile_grid"] if whole and pred(c) else 0.0
    return rule


HYPOTHESES = {
    "H0 engine (ww, no padding)": (False, "whole_wave"),
    "H1 padding + ww": (True, "whole_wave"),
    "H2 padding, no wait (full drain)": (True, "none"),
    "H3 padding + ww iff >= 4 late clusters": (True, _ww_if(lambda c: c["L"] // c["cluster"] >= 4)),
    "H4 padding + ww iff the drain is 2 waves": (True, _ww_if(lambda c: c["tiles"] - c["L"] == 2 * c["slots"])),
}


def posthoc_rounds():
    """Every hypothesis on rounds 1-6 (post hoc: the measured values were seen): median / max |error| (points > 12%)."""
    pts = list(points())
    for name, (pad, rule) in HYPOTHESES.items():
        res = evaluate(rule, pts, pad)
        cells = []
        for rnd, vals in res.items():
            md, mx, miss = stats([x[3] for x in vals])
            cells.append(f"{rnd} {md:.2f}/{mx:.2f}% ({miss})")
        print(f"{name:42s} " + "; ".join(cells))



# ---------------------------------------------------------------------------------------------------------------
# Run 14 (device_run_r7a.sh): the probe's shapes and B, and the kernels assumed BEFORE it ran (the H200's and round
# 6's choices for these shapes or their like); the table of predicted tile-time counts under each hypothesis is
# printed from these (--probe-plan) and, after the run, from the kernels ncu read (--probe DIR).
PROBE_SHAPES = [(1536, 6144, 8192), (3072, 3072, 8192), (4096, 2048, 8192), (3072, 4608, 8192), (4096, 3072, 8192),
                (2688, 4608, 8192), (3648, 3840, 8192), (4224, 3072, 8192), (3264, 4416, 8192)]
PROBE_B = [2, 3, 4, 8, 12, 16, 28, 44]
K2x1 = "nvjet_sm90_tst_192x192_64x4_2x1_v_bz_coopB_TNN"
K1x2 = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"
ASSUMED = {(1536, 6144, 8192): K2x1, (3072, 3072, 8192): K2x1, (4096, 2048, 8192): K1x2, (3072, 4608, 8192): K2x1,
           (4096, 3072, 8192): K1x2, (2688, 4608, 8192): K1x2, (3648, 3840, 8192): K2x1, (4224, 3072, 8192): K1x2,
           (3264, 4416, 8192): K2x1}


def case(sh, kernel, B, alone_us=100.0, grid=132, cluster=2, threads=384, regs=168, smem=213204):
    tm, tn = map(int, re.search(r"_tst_(\d+)x(\d+)_", kernel).groups())
    return dict(m=sh[0], n=sh[1], k=sh[2], tile_m=tm, tile_n=tn, grid=grid, cluster=cluster, gemm_threads=threads,
                gemm_regs=regs, gemm_smem_bytes=smem, alone_time_us=alone_us, neighbour="compute", blocks=B,
                neighbour_threads=512, neighbour_regs=21, kernel=kernel)


def probe_plan():
    M = E.Machine("hw/h100-1gpu.yaml")
    names = list(HYPOTHESES)
    print("predicted GEMM time beside the compute kernel, in tile times (alone / ceil(tiles / grid), unpadded tiles),"
          " kernels as ASSUMED; columns: " + ", ".join(n.split()[0] for n in names))
    for sh in PROBE_SHAPES:
        kern = ASSUMED[sh]
        for B in PROBE_B:
            p = case(sh, kern, B)
            unit = E.beside(M, p, rule="none")["tile_us"]
            vals = []
            for n in names:
                pad, rule = HYPOTHESES[n]
                r = E.beside(M, p, rule=rule, cdims=cdims_of(kern) if pad else None)
                vals.append(r["pred_us"] / unit)
            r = E.beside(M, p, rule="none", cdims=cdims_of(kern))
            flag = " <- differ" if max(vals[1:]) - min(vals[1:]) > 0.5 else ""
            print(f"{sh[0]}x{sh[1]}x{sh[2]} B={B:2d} tiles {r['tiles']:3d} S {r['S']:3d} L {r['L']:2d}  " +
                  " ".join(f"{v:5.2f}" for v in vals) + flag)



def probe_results(d):
    """Run 14's records (device_run_r7a.sh files in d): each beside point against every hypothesis, with the kernels
    ncu read and the alone times measured in the same call (compute neighbour: no HBM stretch)."""
    import csv, io
    M = E.Machine("hw/h100-1gpu.yaml")
    txt = "".join(l for l in open(os.path.join(d, "ncu.csv")) if l.startswith('"'))
    ks = {}
    for r in csv.DictReader(io.StringIO(txt)):
        if "nvjet" in r["Kernel Name"]:
            ks.setdefault(int(r["ID"]), {"name": r["Kernel Name"], "grid": r["Grid Size"]})[r["Metric Name"]] = r["Metric Value"]
    ids = sorted(ks)
    assert len(ids) == 2 * len(PROBE_SHAPES), len(ids)
    num = lambda v: float(v.replace(",", ""))
    kern = {}
    for sh, i in zip(PROBE_SHAPES, ids[1::2]):
        k = ks[i]
        g = [int(x) for x in re.findall(r"\d+", k["grid"])]
        kern[sh] = dict(kernel=k["name"], grid=g[0] * g[1] * g[2], cluster=max(1, int(num(k["Cluster Size"]))),  # ncu says 0 for no cluster
                        regs=int(num(k["Registers Per Thread"])), smem=int(num(k["Dynamic Shared Memory Per Block"]) +
                                                                          num(k["Static Shared Memory Per Block"])))
    alone = {}
    for l in open(os.path.join(d, "alone.jsonl")):
        r = json.loads(l)
        if r["measure"] == "gemm_alone" and r["sm_target"] == 0: alone[(r["m"], r["n"], r["k"])] = r["time_us"]
    names = list(HYPOTHESES)
    errs = {n: [] for n in names}
    print(f"{'shape':16s} {'kernel':34s} {'B':>2s} tiles(pad)  S   L rem | meas | " + " ".join(n.split()[0].rjust(5) for n in names)
          + " | err% " + " ".join(n.split()[0].rjust(6) for n in names))
    for l in open(os.path.join(d, "beside.jsonl")):
        r = json.loads(l)
        if r["measure"] != "gemm_beside": continue
        sh = (r["m"], r["n"], r["k"]); k = kern[sh]
        p = case(sh, k["kernel"], r["blocks"], alone_us=alone[sh], grid=k["grid"], cluster=k["cluster"], regs=k["regs"], smem=k["smem"])
        # --recorded-placement (post hoc): the neighbour's SMs as its %smid record beside this GEMM, not the dispatch rule
        held = sorted(set(int(x) for x in r["smids"])) if "--recorded-placement" in sys.argv else None
        base = E.beside(M, p, rule="none", held_override=held)
        unit = base["tile_us"]
        vals = []
        for n in names:
            pad, rule = HYPOTHESES[n]
            v = E.beside(M, p, rule=rule, cdims=cdims_of(k["kernel"]) if pad else None, held_override=held)["pred_us"]
            vals.append(v); errs[n].append(100 * (v - r["time_us"]) / r["time_us"])
        rp = E.beside(M, p, rule="none", cdims=cdims_of(k["kernel"]), held_override=held)
        rem = (rp["tiles"] - rp["L"]) % rp["S"] if rp["S"] else -1
        print(f"{sh[0]}x{sh[1]}x{sh[2]:<5d} {k['kernel'][15:49]:34s} {r['blocks']:2d} {base['tiles']:4d}({rp['tiles']:4d}) {rp['S']:4d} {rp['L']:3d} {rem:3d} | "
              f"{r['time_us'] / unit:4.2f} | " + " ".join(f"{v / unit:5.2f}" for v in vals) + " | " +
              " ".join(f"{100 * (v - r['time_us']) / r['time_us']:+6.1f}" for v in vals))
    for n in names:
        md, mx, miss = stats(errs[n])
        print(f"{n:42s} n={len(errs[n])} median {md:.2f}% max {mx:.2f}% over 12%: {miss}")


if __name__ == "__main__":
    if "--hyp" in sys.argv: posthoc_rounds()
    elif "--probe-plan" in sys.argv: probe_plan()
    elif "--probe" in sys.argv: probe_results(sys.argv[sys.argv.index("--probe") + 1])
    else: main_table()
