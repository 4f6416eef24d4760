#!/usr/bin/env python3
"""Rounds 7-10 of issue 19 on one H100 (calibrate/data/h100/README.md "Round 7" .. "Round 10"): the one
generator behind make_smshare_r7.py, make_smshare_r8.py, make_smshare_r9.py and make_smshare_r10.py, which call main(n).

For a round it writes scenarios/h100-sm-sharing-r{n}.yaml, the GEMM beside a copy or compute kernel of B blocks on
one H100 at shapes never measured before, and the pre-registered predictions of models::gemm_beside. Inputs, all
one-kernel-alone records of the round's probe run (probe_smshare_alone_r{n}_h100.jsonl,
ncu_launchstats_gemm_once_r{n}_h100.csv): the GEMM's alone time and launch statistics, the neighbours' attributes and
the copy kernel's bandwidth alone at each B. No case carries a placement, a slot count or a coefficient. The grid
(fixed before the probe): every candidate whose default plan is persistent (tiles > grid) (rounds 9-10: and whose kernel
has a row in hw/data/h100-kappa-by-kernel.jsonl), in CAND order, at most 6; the round's B; both neighbours.

  (no option)  the scenario without measured values
  --predict    the same, then build/fusesim run -> smshare_predictions_r{n}_h100.json
  --grid       the arguments of device_run_r{n}.sh measure
  --measured   the cases with the measuring run's beside times and their sources (and the drift of the alone records)
python3 calibrate/data/h100/smshare_rounds.py candidates N prints round N's candidate shapes and B (MxNxK,... B,...) for
device_run_rounds.sh.
Paths are relative to the repository root, whatever the working directory.
"""
import csv, datetime, io, json, math, os, re, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
REL = "calibrate/data/h100"
HW = "hw/h100-1gpu.yaml"
BASE_KEYS = ("predicted_us", "cta_slots", "late_ctas", "hbm_stretch", "alone_us", "neighbour_sms", "tiles", "scheduled_tiles",
             "late_work_ids")

# id -> known_miss note, written only after run 18 (H100, 2026-12-06), from what its records show; the model and
# its predictions are unchanged by them.
SLOT8 = ("the model lacks: one more 8-CTA cluster slot beside 30 blocks. The 4x2-cluster kernel (15 clusters of 8, 30 units) "
         "took 4 unit times at B = 10, 14 and 30 alike (348-399 us), so at least 8 clusters fit beside B = 30; the engine counts "
         "7 (sum over GPCs of floor(free SMs / 8) on the sm_map, whose GPC of SMs 120..131 is assumed) and gives 8 late clusters, "
         "one of them a third pair of units: +48..53%. The same kernel family was within 3.1% at B = 3, 5, 45, 46 in round 6 and "
         "here at B = 5, 10, 14")
KAPPA7 = ("the model lacks: the HBM queue of this shape. The compute neighbour at B = 30 is within 1.7% (the SM part is right); "
         "beside the copy (u = 0.73 of HBM) the GPU took x1.36 of the compute time where the stretch 1 + kappa u / (1 - u) with "
         "kappa 0.0633 (borrowed from the H200, never fitted on this H100) gives x1.17; the other shapes at B = 30 took x1.22-1.25 "
         "(kappa is shape-dependent, as on the H200: 0.048-0.094)")
# SLOT8 was the note of the four 4x2-kernel points at B = 30 until runs 19-20 measured the GPC of TPCs 60 and 61
# (hw/data/h100-sm-map.jsonl: TPC 61 is in GPC 7, which then has 16 free SMs beside B = 30: 8 clusters of 8, not 7);
# with the measured map those points are within 3.4% (post hoc), so they carry no note.
NOTES7 = {f"r7/{s}/copy/B30": KAPPA7 for s in ("2048x5120x8192", "2688x3840x8192")}

# id -> known_miss note, written only after run 22 (H100, 2026-12-06), from what its records show; the model and its
# predictions are unchanged by them.
KAPPA8 = ("the model lacks: this kernel's HBM sensitivity. The compute neighbour at B = 40 is within 1.5% (the SM part is "
         "right); beside the copy (u = 0.83 of HBM) the GPU took x{s} of the compute time where 1 + kappa u / (1 - u) with "
         "the H200's kappa 0.0633 gives x1.31. The copy/compute pairs of rounds 6-8 imply kappa by kernel, consistent "
         "across shapes: 320x128 (3 stages) 0.124-0.140 on 5 shapes, 168x128 0.10, 176x128 0.085-0.095, 256x128 0.072-0.076, "
         "192x128 0.066, 192x192 0.048-0.065; one coefficient does not describe the kernels")
NOTES8 = {"r8/2560x3840x8192/copy/B40": KAPPA8.format(s="1.69"), "r8/3328x3072x8192/copy/B40": KAPPA8.format(s="1.61")}

# id -> known_miss note, written only after run 27 (H100, 2026-12-06), from what its records show; the model and its
# predictions are unchanged by them.
EDGE10 = ("the model lacks: which of two hand-outs one unit apart the GPU takes at a wave edge. The 15 launches beside the "
          "copy at B = 28 split: min 404.4 us (+1.7% from the prediction 397.6), median 460.8 and max 464.2 (one unit more); "
          "the compute neighbour at the same B has its median in the lower mode (333.4 us, predicted 332.5) and a max of 378.0 "
          "in the upper. The engine's hand-out gives the lower mode (six unit times); the upper one is a seventh that no "
          "hand-out of the engine gives here, and unit-time noise as measured (or ten times it) does not reach it "
          "(calibrate/data/h100/README.md, the wave edge of round 10); why the copy tips most launches into it is not "
          "measured: this point's completion times were not recorded")
NOTES10 = {"r10/3072x3840x8192/copy/B28": EDGE10}

# The rounds: their probe and measuring runs, candidates, B, what the model was, the result keys kept, the notes.
ROUNDS = {
    7: dict(probe_run=17, measure_run=18, blocks=[5, 10, 14, 30],
            cand=[(1536, 4608, 8192), (2304, 3840, 8192), (1152, 7680, 8192), (2048, 5120, 8192), (1536, 7680, 8192),
                  (2688, 3840, 8192), (1920, 5376, 8192), (2304, 6144, 8192)],
            model="models::gemm_beside with round 7's hand-out (hw::HandOut::static_two_then_counter).",
            kappa_rows_only=False, kernel_key=False, keys=BASE_KEYS, notes=NOTES7),
    8: dict(probe_run=21, measure_run=22, blocks=[4, 12, 24, 40],
            cand=[(2560, 3840, 8192), (1792, 6144, 8192), (3328, 3072, 8192), (1280, 7168, 8192), (2816, 4096, 8192),
                  (2176, 5632, 8192), (3584, 2560, 8192), (1024, 9216, 8192)],
            model=("models::gemm_beside after round 7: its hand-out (hw::HandOut::static_two_then_counter), the GPCs of SMs "
                   "120..123 measured in runs 19-20, fluid unit progress."),
            kappa_rows_only=False, kernel_key=False, keys=BASE_KEYS, notes=NOTES8),
    9: dict(probe_run=23, measure_run=24, blocks=[6, 20, 32, 44],
            cand=[(3072, 3584, 8192), (2304, 4352, 8192), (1664, 6656, 8192), (2944, 3840, 8192), (3840, 2816, 8192),
                  (1408, 7680, 8192), (2432, 4864, 8192), (3200, 3328, 8192), (2048, 6656, 8192), (3456, 3072, 8192)],
            model=("models::gemm_beside after round 8: round 7's engine and each kernel's HBM coefficient "
                   "(hbm_queue_kappa_by_kernel, fitted on rounds 6-8's copy/compute pairs)."),
            kappa_rows_only=True, kernel_key=True,
            keys=BASE_KEYS[:4] + ("hbm_queue_kappa", "hbm_queue_kappa_source") + BASE_KEYS[4:], notes={}),
    # Round 10 (designed after round 9, before its probe): the model unchanged since round 9, at least 40 points in one
    # pre-registered round. Candidates by one rule: every shape of rounds 7-9 whose kernel has a row in
    # hbm_queue_kappa_by_kernel, in their rounds' order, with m + 128, less those with any earlier record (2688x3840,
    # 3456x3072); B = 8, 16, 28, 36 (none used in rounds 7-9); at most 6 shapes, at least 5 (40 points).
    10: dict(probe_run=26, measure_run=27, blocks=[8, 16, 28, 36], min_shapes=5,
             cand=[(1280, 7680, 8192), (1664, 4608, 8192), (1664, 7680, 8192), (2176, 5120, 8192), (2432, 3840, 8192),
                   (2816, 3840, 8192), (1408, 7168, 8192), (1920, 6144, 8192), (2304, 5632, 8192), (2944, 4096, 8192),
                   (2176, 6656, 8192), (2432, 4352, 8192), (3072, 3840, 8192), (3200, 3584, 8192)],
             model=("models::gemm_beside as in round 9 (round 7's engine, each kernel's HBM coefficient), unchanged after "
                    "round 9's measurement."),
             kappa_rows_only=True, kernel_key=True,
             keys=BASE_KEYS[:4] + ("hbm_queue_kappa", "hbm_queue_kappa_source") + BASE_KEYS[4:], notes=NOTES10),
}


def nvjet_launches(path):
    """ID -> {"name", "grid", metric name -> value} of every cuBLASLt nvjet launch in an `ncu --csv --page details` file
    (its lines before the CSV, ncu's own messages, skipped)."""
    txt = "".join(l for l in open(path) if l.startswith('"'))
    ks = {}
    for r in csv.DictReader(io.StringIO(txt)):
        if "nvjet" in r["Kernel Name"]:
            ks.setdefault(int(r["ID"]), {"name": r["Kernel Name"], "grid": r["Grid Size"]})[r["Metric Name"]] = r["Metric Value"]
    return ks


def main(n):
    """Round n's scenario (and, with --predict / --grid / --measured, as the module docstring says)."""
    bad = [a for a in sys.argv[1:] if a not in ("--predict", "--grid", "--measured")]
    if bad:  # refused before anything is written: a misspelt flag must not fall through to writing the scenario
        sys.exit(f"make_smshare_r{n}.py: unknown argument(s) {' '.join(bad)} (expected --predict, --grid or --measured)")
    R = ROUNDS[n]
    CAND, BLOCKS, NOTES = R["cand"], R["blocks"], R["notes"]
    ALONE, NCU = f"probe_smshare_alone_r{n}_h100.jsonl", f"ncu_launchstats_gemm_once_r{n}_h100.csv"
    ALONEM, BES = f"probe_smshare_alone_r{n}m_h100.jsonl", f"probe_smshare_beside_r{n}_h100.jsonl"
    SCEN = f"scenarios/h100-sm-sharing-r{n}.yaml"
    PRED = os.path.join(HERE, f"smshare_predictions_r{n}_h100.json")
    probe, meas = R["probe_run"], R["measure_run"]
    alone = [json.loads(l) for l in open(os.path.join(HERE, ALONE)).read().splitlines()]
    gemm = {(d["m"], d["n"], d["k"]): (i + 1, d) for i, d in enumerate(alone) if d["measure"] == "gemm_alone" and d["sm_target"] == 0}
    nb = {(d["neighbour"], d["blocks"]): (i + 1, d) for i, d in enumerate(alone) if d["measure"] == "neighbour_alone"}
    ks = nvjet_launches(os.path.join(HERE, NCU))
    ids = sorted(ks)
    if len(ids) != 2 * len(CAND): sys.exit(f"expected {2 * len(CAND)} nvjet launches (select run + run per shape), found {len(ids)}")
    num = lambda s: float(s.replace(",", ""))
    kern = {}
    for sh, i in zip(CAND, ids[1::2]):
        k = ks[i]
        tm, tn = map(int, re.search(r"_tst_(\d+)x(\d+)_", k["name"]).groups())
        cm, cn = map(int, re.search(r"_tst_\d+x\d+_\d+x\d+_(\d+)x(\d+)_", k["name"]).groups())
        g = [int(x) for x in re.findall(r"\d+", k["grid"])]
        ctas = g[0] * g[1] * g[2]
        cl = max(1, int(num(k["Cluster Size"])))
        if cl != cm * cn: sys.exit(f"{sh}: cluster size {cl} is not the name's {cm}x{cn}")
        kern[sh] = dict(kernel=k["name"], tile_m=tm, tile_n=tn, grid=ctas, cluster=cl, cluster_m=cm, cluster_n=cn,
                        regs=int(num(k["Registers Per Thread"])), threads=int(num(k["Threads"]) / ctas),
                        smem=int(num(k["Dynamic Shared Memory Per Block"]) + num(k["Static Shared Memory Per Block"])), ncu_id=i)
    tiles_of = lambda sh: math.ceil(sh[1] / kern[sh]["tile_m"]) * math.ceil(sh[0] / kern[sh]["tile_n"])
    KAPPA_KERNELS = ({json.loads(l)["kernel"] for l in open(os.path.join(ROOT, "hw", "data", "h100-kappa-by-kernel.jsonl")) if l.strip()}
                     if R["kappa_rows_only"] else None)
    SHAPES = [sh for sh in CAND if tiles_of(sh) > kern[sh]["grid"] and (KAPPA_KERNELS is None or kern[sh]["kernel"] in KAPPA_KERNELS)][:6]
    need = R.get("min_shapes", 4)
    if len(SHAPES) < need: sys.exit(f"only {len(SHAPES)} persistent candidates: fewer than the round's {need} shapes")
    if "--grid" in sys.argv:
        print(",".join(f"{a}x{b}x{c}" for a, b, c in SHAPES), ",".join(map(str, BLOCKS)))
        return

    measured = {}
    if "--measured" in sys.argv:
        for i, l in enumerate(open(os.path.join(HERE, BES)).read().splitlines()):
            d = json.loads(l)
            if d["measure"] == "gemm_beside": measured[(d["m"], d["n"], d["k"], d["neighbour"], d["blocks"])] = (i + 1, d)
        for l in open(os.path.join(HERE, ALONEM)).read().splitlines():  # drift: printed, not used
            d = json.loads(l)
            if d["measure"] == "gemm_alone" and (d["m"], d["n"], d["k"]) in gemm:
                a = gemm[(d["m"], d["n"], d["k"])][1]["time_us"]
                print(f"drift GEMM alone {d['m']}x{d['n']}x{d['k']}: {d['time_us']} us vs {a} us ({100 * (d['time_us'] / a - 1):+.2f}%)")
            if d["measure"] == "neighbour_alone" and d["neighbour"] == "copy" and ("copy", d["blocks"]) in nb:
                a = nb[("copy", d["blocks"])][1]["GBps"]
                print(f"drift copy alone B = {d['blocks']}: {d['GBps']} GB/s vs {a} ({100 * (d['GBps'] / a - 1):+.2f}%)")

    out = [f"# A GEMM beside a kernel holding B SMs on one H100, round {n} of issue 19: shapes never measured before (their",
           f"# kernels as cuBLASLt chose them in run {probe}) at B = {', '.join(map(str, BLOCKS))} x 2 neighbours. Params are the components",
           f"# measured alone (run {probe}); placement, cluster slots, the hand-out (round 7: each cluster's first two units static,",
           "# then a shared counter; the late clusters' work ids from the hardware's late_cluster_work_ids) and the HBM stretch",
           f"# are computed by models/sm_sharing from {HW}. Generated by calibrate/data/h100/make_smshare_r{n}.py; predictions",
           f"# pre-registered in {REL}/smshare_predictions_r{n}_h100.json before run {meas} measured the beside times.",
           f"scenario: h100-sm-sharing-r{n}",
           f'description: "round {n}: cuBLASLt GEMM ({len(SHAPES)} new shapes) beside a copy or compute kernel of B = {", ".join(map(str, BLOCKS))} blocks on one H100"',
           f"hardware: {HW}", "model: sm_sharing", "tolerance_pct: 12", "cases:"]
    for sh in SHAPES:
        k = kern[sh]
        gl, g = gemm[sh]
        for kind in ("copy", "compute"):
            for b in BLOCKS:
                nl, a = nb[(kind, b)]
                extra = f", neighbour_alone_GBps: {a['GBps']:.3f}" if kind == "copy" else ""
                cid = f"r{n}/{sh[0]}x{sh[1]}x{sh[2]}/{kind}/B{b}"
                out += [f"  - id: {cid}",
                        f"    params: {{m: {sh[0]}, n: {sh[1]}, k: {sh[2]}, tile_m: {k['tile_m']}, tile_n: {k['tile_n']}, grid: {k['grid']}, "
                        f"cluster: {k['cluster']}, cluster_m: {k['cluster_m']}, cluster_n: {k['cluster_n']}, "
                        + (f"kernel: {k['kernel']}, " if R["kernel_key"] else "") + f"gemm_threads: {k['threads']}, "
                        f"gemm_regs: {k['regs']}, gemm_smem_bytes: {k['smem']}, alone_time_us: {g['time_us']}, neighbour: {kind}, blocks: {b}, "
                        f"neighbour_threads: {a['threads']}, neighbour_regs: {a['regs_per_thread']}{extra}, cover: 20}}"]
                src = (f"inputs: {REL}/{ALONE} line {gl} (commit {g['commit'][:12]}, {g['date']}), line {nl} (neighbour alone, {a['date']}); "
                       f"kernel {k['kernel']} ({NCU} ID {k['ncu_id']}), {tiles_of(sh)} tiles")
                if sh + (kind, b) in measured:
                    ml, d = measured[sh + (kind, b)]
                    miss = NOTES.get(cid, "")
                    out += [f"    measured: {{value_us: {d['time_us']}, source: \"{REL}/{BES} line {ml} (commit {d['commit'][:12]}, "
                            f"{d['date']}); {src}\"" + (f", known_miss: \"{miss}\"" if miss else "") + "}"]
                else:
                    out += [f"    # {src}"]
    open(os.path.join(ROOT, SCEN), "w").write("\n".join(out) + "\n")
    print(f"wrote {SCEN}: {len(SHAPES)} shapes x {len(BLOCKS)} B x 2 neighbours = {2 * len(SHAPES) * len(BLOCKS)} cases")
    for sh in SHAPES:
        k = kern[sh]
        print(f"  {sh}: {k['kernel']} grid {k['grid']} cluster {k['cluster']} ({k['cluster_m']}x{k['cluster_n']}), {tiles_of(sh)} tiles, alone {gemm[sh][1]['time_us']} us")

    if "--predict" in sys.argv:
        cmd = ["build/fusesim", "run", SCEN, "--format", "json"]
        res = json.loads(subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout)
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "hw", "models", "sim"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        keys = R["keys"]
        preds = [dict(id=c["id"], **{k: c[k] for k in keys if k in c}) for c in res["cases"]]
        doc = {"what": (f"ROUND {n} of issue 19: PRE-REGISTERED predictions of the GEMM beside a copy or compute kernel of B blocks on one "
                        f"H100: {len(SHAPES)} shapes never measured before ({', '.join('x'.join(map(str, s)) for s in SHAPES)}) at B = "
                        f"{', '.join(map(str, BLOCKS))}, {len(preds)} points, made by fusesim run on the committed scenario before run {meas} "
                        "measures them. The model is " + R["model"]),
               "command": " ".join(cmd), "commit": head, "engine_tree_dirty": bool(dirty),
               "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "hardware": f"{HW} (rate line and cap of run 12, smshare.hbm_queue_kappa borrowed from the H200, tables sm_map and late_cluster_work_ids)",
               "predictions": preds}
        json.dump(doc, open(PRED, "w"), indent=1)
        print(f"wrote {os.path.relpath(PRED, ROOT)}: {len(preds)} predictions at {head[:12]}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "candidates" or not sys.argv[2].isdigit() or int(sys.argv[2]) not in ROUNDS:
        sys.exit(f"usage: smshare_rounds.py candidates N (N in {sorted(ROUNDS)})")
    R = ROUNDS[int(sys.argv[2])]
    print(",".join(f"{a}x{b}x{c}" for a, b, c in R["cand"]), ",".join(map(str, R["blocks"])))
