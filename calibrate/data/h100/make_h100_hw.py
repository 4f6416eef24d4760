#!/usr/bin/env python3
"""Issue 19 round 6 on an H100: writes hw/h100-1gpu.yaml and hw/data/h100-sm-map.jsonl from the H100 probe's
ONE-KERNEL-ALONE files (device_run_r6.sh COMMIT probe on an H100, put here by ingest_r6.sh probe FILES h100), by the
methods that made hw/h200-1gpu.yaml and hw/data/h200-sm-map.jsonl:

  gpu.compute_units        the probe's machine record (sm_count)                         [measured]
  gpu.sms_per_tpc          ncu LaunchStats '# SMs' / '# TPCs' of the default plans        [measured]
  memory.fabric_bandwidth  copy kernel alone, 132..528 blocks: the plateau (max), as
                           predict_smshare.py took C_hbm                                    [measured]
  smshare.tile_rate_at_zero, smshare.tile_rate_slope
                           least squares r(n) = r0 - slope n of the per-SM tile rate
                           (rounds x 2 tile_m tile_n K / time, n = the plan's grid, tile and grid from ncu)
                           over the GEMM-alone plans at SM-count targets 0 (default), 128, 124, 116, 100,
                           99, 84, 66 (predict_smshare.py's fit)                              [fitted]
  smshare.tile_rate_max    r_line(SMs) x median over shapes of (median rate planned for 4, 8, 16 SMs) /
                           (rate of the default plan); sigma = half the spread of the per-shape ratios x
                           r_line(SMs) (fit_tile_rate_cap_r5.py's rule; grid and tile of each plan from ncu
                           instead of assumed)                                              [fitted]
  smshare.hbm_queue_kappa  NOT identified by alone records: the H200 beside fit carried, kind derived
                           with a note saying it is assumed                                 [assumed]
  tables.sm_map            GPC of each SM from clusters of 4/8/16 CTAs (union of co-clustered SMs; SMs in
                           no such cluster are attached a TPC at a time to the largest GPCs in order, the
                           H200 assumption), TPC = SM / sms_per_tpc, the dispatcher's first SMs from the
                           neighbours alone at B = 1..8 (make_sm_map_r3.py's method)          [measured]

Inputs (this folder): probe_smshare_gpcmap_h100.jsonl, probe_smshare_alone_r6_h100.jsonl,
ncu_launchstats_gemm_once_r6_h100.csv, ncu_launchstats_rates_h100.csv, commands_run12_h100.txt.
Prints the fits and checks the dispatch rule (hw::dispatch_placement, re-implemented) against every
neighbour-alone %smid record. Nothing beside anything is read.

  /usr/bin/python3 calibrate/data/h100/make_h100_hw.py [--check-h200]
  --check-h200: apply the GPC/first-SM rules to the H200 records and compare with hw/data/h200-sm-map.jsonl
"""
import csv, datetime, io, json, math, os, re, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
REL = "calibrate/data/h100/"
GPCMAP, ALONE = "probe_smshare_gpcmap_h100.jsonl", "probe_smshare_alone_r6_h100.jsonl"
# The late clusters' work ids of nvjet's grid of 66 clusters of 2 (round 7, runs 15-16), as hw/h100-1gpu.yaml's table.
LATE_SRC = ("the work ids (the first unit each cluster runs) of the late clusters, blockIdx 65, 64, ..., of nvjet's persistent grid "
            "of 66 clusters of 2 CTAs (grid (2, 66, 1)), read off when each output tile is written beside a polling neighbour of "
            "B = 1..48 blocks (probe_smshare --mode tiletimes; calibrate/data/h100/probe_smshare_tiletimes_r16_h100.jsonl, run 16 on "
            "one NVIDIA H100 80GB HBM3, 2026-12-06, probe commit 1d676bc; calibrate/data/h100/analyse_r15_tiletimes.py): the same "
            "list for both kernels measured (192x192 2x1 on 1536x6144x8192, 256x128 1x2 on 4096x3072x8192, the latter's work ids "
            "numbered row-pair-major) and for every shape of run 15; the late set grows one cluster slot at a time; where several "
            "ids turn late at the same B (B = 26..48) their order is not measured and is kept as listed.")
# The HBM queueing coefficient per kernel (after round 8), written by fit_kappa_by_kernel.py.
KAPPA_SRC = ("each nvjet kernel's HBM queueing coefficient, the median over its copy/compute pairs with u >= 0.6 of "
             "(copy / compute - 1) (1 - u) / u (the GEMM beside the copy kernel and beside the compute kernel of the same B "
             "hold the same SMs: their ratio is the HBM stretch alone), rounds 6-8 on this H100 (2026-12-06: "
             "calibrate/data/h100/probe_smshare_beside_r{6,7,8}_h100.jsonl, the copy's bandwidth alone and the kernels of the "
             "same rounds; calibrate/data/h100/fit_kappa_by_kernel.py): 9 kernels, 0.049 (192x192 2x1) .. 0.140 (320x128 2x4); "
             "a case selects its row by its `kernel` key; the rows were fitted on the very pairs of rounds 6-8, so those "
             "rounds' copy points are not predictions of it")
# Runs 19-20 (round 7): clusters of 4..8 CTAs on the SMs left free beside a holder of SMs 0..119 (probe_smshare --mode
# gpcrest) and, after the hold, anywhere: their SMs share a GPC (only the membership is used).
GPCREST = ["probe_smshare_gpcrest_r19a_h100.jsonl", "probe_smshare_gpcrest_r19_h100.jsonl", "probe_smshare_gpcmap_r19_h100.jsonl",
           "probe_smshare_gpcrest_r20_h100.jsonl", "probe_smshare_gpcfree_r20_h100.jsonl", "probe_smshare_gpcmap_r20_h100.jsonl"]
NCU0, NCUR, CMDS = "ncu_launchstats_gemm_once_r6_h100.csv", "ncu_launchstats_rates_h100.csv", "commands_run12_h100.txt"
LINE_TARGETS = (0, 128, 124, 116, 100, 99, 84, 66)
CAP_TARGETS = (4, 8, 16)


def gpc_groups(rows, nsm, per_tpc):
    """GPC groups: union of the SMs of each cluster of >= 4 CTAs (run 12's cluster placements and, since round 7,
    runs 19-20's clusters on the SMs the others left free, GPCREST: TPC 60 with GPC 6, TPC 61 with GPC 7); SMs in
    none attached a TPC at a time, in TPC order, to the largest groups in group order (cycling) among the groups no
    measured cluster extended beyond the SMs run 12 placed clusters on (an ASSUMPTION, as make_sm_map_r3.py
    attached SMs 120..131 to GPCs 1..6)."""
    par = list(range(nsm))
    def find(x):
        while par[x] != x:
            par[x] = par[par[x]]; x = par[x]
        return x
    seen = set()
    for d in rows:
        if d.get("measure") not in ("cluster_placement", "cluster_on_rest") or d["cluster"] < 4: continue
        s = [int(v) for v in d["smids"]]
        for i in range(0, len(s), d["cluster"]):
            seen.update(s[i:i + d["cluster"]])
            for v in s[i + 1:i + d["cluster"]]: par[find(v)] = find(s[i])
    groups = {}
    for i in sorted(seen): groups.setdefault(find(i), []).append(i)
    groups = sorted(groups.values(), key=lambda g: g[0])
    left = sorted(set(range(nsm)) - seen)
    tpcs = sorted({s // per_tpc for s in left})
    base = set(int(v) for d in rows if d.get("measure") == "cluster_placement" and d["cluster"] >= 4 for v in d["smids"])
    plain = [g for g in groups if set(g) <= base]  # groups no measured extra TPC joined
    big = max(len(g) for g in plain)
    targets = [g for g in plain if len(g) == big]
    for i, t in enumerate(tpcs):
        targets[i % len(targets)] += [s for s in left if s // per_tpc == t]
    return groups, left


def first_sms(nb_rows):
    """The dispatcher's first SMs: walking B = 1..8 upwards, the SMs new at each B (ascending within one step)."""
    sets = {}
    for d in nb_rows:
        if d["blocks"] <= 8: sets.setdefault(d["blocks"], set(int(s) for s in d["smids"]))
    first, have = [], set()
    for b in sorted(sets):
        if not have <= sets[b]: sys.exit(f"the neighbours' SM sets at B <= 8 are not nested (B = {b}): no dispatch order")
        first += sorted(sets[b] - have); have = set(sets[b])
    return first


def dispatch(B, groups, first, per_tpc, nsm):
    """hw::dispatch_placement (the same rule as make_sm_map_r3.py)."""
    out = first[:B]; used = set(out)
    lanes = [[[s for s in sorted(g) if s // per_tpc == t] for t in sorted({s // per_tpc for s in g})] for g in groups]
    lane = 0
    while len(out) < min(B, nsm) and lane < per_tpc:
        q = [[t[lane] for t in lanes[g] if len(t) > lane and t[lane] not in used] for g in range(len(groups))]
        nxt = [0] * len(groups); placed = True
        while placed and len(out) < B:
            placed = False
            for g in range(len(groups)):
                if len(out) < B and nxt[g] < len(q[g]):
                    out.append(q[g][nxt[g]]); used.add(q[g][nxt[g]]); nxt[g] += 1; placed = True
        lane += 1
    return out


def check_dispatch(nb_rows, groups, first, per_tpc, nsm):
    bad, n = 0, 0
    for d in nb_rows:
        B = d["blocks"]; meas = {int(s) for s in d["smids"]}
        ok = meas == set(dispatch(B, groups, first, per_tpc, nsm)) if B <= nsm else len(meas) == nsm
        n += 1; bad += not ok
        if not ok: print(f"  dispatch rule differs: {d['neighbour']} B = {B}")
    return n, bad


if "--check-h200" in sys.argv:  # the rules reproduce the H200 table from the H200 records
    H2 = os.path.join(ROOT, "calibrate", "data", "h200")
    rows = [json.loads(l) for l in open(os.path.join(H2, "probe_smshare_gpcmap.jsonl"))]
    groups, left = gpc_groups(rows, 132, 2)
    nbr = [json.loads(l) for l in open(os.path.join(H2, "probe_smshare_alone.jsonl"))]
    first = first_sms([d for d in nbr if d["measure"] == "neighbour_alone" and d["neighbour"] == "copy"])
    ref = [json.loads(l) for l in open(os.path.join(ROOT, "hw", "data", "h200-sm-map.jsonl"))]
    gid = {s: i for i, g in enumerate(groups) for s in g}
    same = all(r["gpc"] == gid[r["sm"]] and r.get("dispatch_first") == (first.index(r["sm"]) if r["sm"] in first else None) for r in ref)
    print(f"H200: groups {[len(g) for g in groups]}, unplaced SMs {left}, first SMs {first}; identical to hw/data/h200-sm-map.jsonl: {same}")
    sys.exit(0 if same else 1)

# ---- inputs
def lines(fn): return [json.loads(l) for l in open(os.path.join(HERE, fn)) if l.strip().startswith("{")]
alone = lines(ALONE)
mach = alone[0]["machine"]
if "H100" not in mach["gpu_name"]: sys.exit(f"{ALONE}: gpu_name {mach['gpu_name']!r} is not an H100")
NSM = int(mach["sm_count"])
commit_probe = alone[0]["commit"][:12]
date_probe = alone[0]["date"]
cmds = [l.strip() for l in open(os.path.join(HERE, CMDS)) if l.startswith("probe_smshare") or l.startswith("ncu")]
cmd_of = lambda key: next(c for c in cmds if key in c)


def ncu_kernels(fn):
    txt = "".join(l for l in open(os.path.join(HERE, fn)) if l.startswith('"'))
    ks, dev = {}, {}
    for r in csv.DictReader(io.StringIO(txt)):
        if r["Metric Name"] in ("# SMs", "# TPCs"): dev[r["Metric Name"]] = int(float(r["Metric Value"].replace(",", "")))
        if "nvjet" in r["Kernel Name"]:
            ks.setdefault(int(r["ID"]), {"name": r["Kernel Name"], "grid": r["Grid Size"]})[r["Metric Name"]] = r["Metric Value"]
    out = []
    for i in sorted(ks):
        k = ks[i]
        t = re.search(r"_tst_(\d+)x(\d+)_", k["name"])
        tm, tn = map(int, t.groups()) if t else (None, None)  # a kernel without the tile in its name: not used
        g = [int(x) for x in re.findall(r"\d+", k["grid"])]
        out.append(dict(id=i, kernel=k["name"], tile_m=tm, tile_n=tn, grid=g[0] * g[1] * g[2]))
    return out, dev


# The plans in the probe's order (shape-major, then SM target), each one 2 nvjet launches under ncu (the plan's
# select run, then its run): the second is the plan's kernel (as make_smshare_r6.py reads the default plans).
gem = [d for d in alone if d["measure"] == "gemm_alone"]
shapes = list(dict.fromkeys((d["m"], d["n"], d["k"]) for d in gem))
k0, dev = ncu_kernels(NCU0)
kr, _ = ncu_kernels(NCUR)
if len(k0) != 2 * len(shapes): sys.exit(f"{NCU0}: {len(k0)} nvjet launches for {len(shapes)} default plans (expected 2 each)")
rate_plans = [(d["m"], d["n"], d["k"], d["sm_target"]) for d in gem if d["sm_target"] != 0 and "error" not in d]
if len(kr) != 2 * len(rate_plans):
    sys.exit(f"{NCUR}: {len(kr)} nvjet launches for {len(rate_plans)} SM-target plans without error (expected 2 each)")
kern = {sh + (0,): k for sh, k in zip(shapes, k0[1::2])}
kern.update({p: k for p, k in zip(rate_plans, kr[1::2])})
tiles_of = lambda sh, k: math.ceil(sh[1] / k["tile_m"]) * math.ceil(sh[0] / k["tile_n"])
rate, grid_of = {}, {}
for d in gem:
    p = (d["m"], d["n"], d["k"], d["sm_target"])
    if "time_us" not in d or p not in kern: continue
    k = kern[p]; sh = p[:3]
    if k["tile_m"] is None:
        print(f"  plan {p}: kernel {k['kernel']} names no tile: left out of the fits"); continue
    rounds = math.ceil(tiles_of(sh, k) / k["grid"])
    rate[p] = 2.0 * k["tile_m"] * k["tile_n"] * sh[2] / (d["time_us"] / rounds * 1e-6) / 1e12
    grid_of[p] = k["grid"]

# ---- tile-rate line (predict_smshare.py's least squares)
pts = [p for p in rate if p[3] in LINE_TARGETS]
ns = [float(grid_of[p]) for p in pts]; rs = [rate[p] for p in pts]
mn, mr = statistics.fmean(ns), statistics.fmean(rs)
sxx = sum((x - mn) ** 2 for x in ns)
if len(pts) < 3 or sxx == 0: sys.exit(f"the tile-rate line needs plans of several grids ({len(pts)} plans)")
slope = -sum((x - mn) * (y - mr) for x, y in zip(ns, rs)) / sxx  # r = r0 - slope n (least squares)
r0 = mr + slope * mn
rms = math.sqrt(statistics.fmean([(y - (r0 - slope * x)) ** 2 for x, y in zip(ns, rs)]))
rl = lambda n: r0 - slope * n
print(f"tile-rate line over {len(pts)} plans (grids {int(min(ns))}..{int(max(ns))}): r0 {r0:.5f}, slope {slope:.6f} TFLOP/s, rms {rms:.4f}")

# ---- cap (fit_tile_rate_cap_r5.py's rule)
ratios = []
for sh in shapes:
    if not all(sh + (t,) in rate for t in CAP_TARGETS + (0,)): continue
    small = statistics.median([rate[sh + (t,)] for t in CAP_TARGETS])
    ratios.append(small / rate[sh + (0,)])
    print(f"  {'x'.join(map(str, sh))}: rate default {rate[sh + (0,)]:.3f}, at 4/8/16 SMs "
          f"{' '.join(f'{rate[sh + (t,)]:.3f}' for t in CAP_TARGETS)}, ratio {ratios[-1]:.4f}")
if len(ratios) < 3: sys.exit(f"only {len(ratios)} shapes have plans at 4, 8, 16 SMs and the default: no cap")
ratio = statistics.median(ratios)
cap = rl(NSM) * ratio
cap_sig = (max(ratios) - min(ratios)) / 2 * rl(NSM)
print(f"tile_rate_max {cap:.4f} TFLOP/s (+- {cap_sig:.3f}) = r_line({NSM}) {rl(NSM):.4f} x median ratio {ratio:.4f}; "
      f"the line reaches it at n = {(r0 - cap) / slope:.1f}")

# ---- copy plateau
nbr = [d for d in alone if d["measure"] == "neighbour_alone"]
plat = {d["blocks"]: d["GBps"] for d in nbr if d["neighbour"] == "copy" and d["blocks"] >= NSM}
if not plat: sys.exit("no copy-alone record at B >= SMs")
C = max(plat.values())
print(f"copy plateau (B = {sorted(plat)}): {', '.join(f'{plat[b]:.1f}' for b in sorted(plat))} GB/s -> {C:.2f}")

# ---- SM map
if dev.get("# TPCs", 0) <= 0 or dev.get("# SMs") != NSM: sys.exit(f"{NCU0}: '# SMs' {dev.get('# SMs')} / '# TPCs' {dev.get('# TPCs')}")
PER = dev["# SMs"] // dev["# TPCs"]
groups, left = gpc_groups(lines(GPCMAP) + [r for f in GPCREST for r in lines(f)], NSM, PER)
gid = {s: i for i, g in enumerate(groups) for s in g}
if len(gid) != NSM: sys.exit(f"the GPC groups hold {len(gid)} SMs, not {NSM}")
first = first_sms([d for d in nbr if d["neighbour"] == "copy"])
fc = first_sms([d for d in nbr if d["neighbour"] == "compute"])
if fc != first: print(f"WARNING: the compute neighbour's first SMs {fc} differ from the copy's {first}")
n_chk, bad = check_dispatch(nbr, groups, first, PER, NSM)
print(f"GPCs: {len(groups)} of {[len(g) for g in groups]} SMs; SMs in no cluster of >= 4 (GPC assumed): {left}; first SMs {first}")
print(f"dispatch rule against {n_chk} neighbour-alone %smid records: {n_chk - bad} identical sets, {bad} differ")
with open(os.path.join(ROOT, "hw", "data", "h100-sm-map.jsonl"), "w") as f:
    for s in range(NSM):
        row = {"sm": s, "gpc": gid[s], "tpc": s // PER}
        if s in first: row["dispatch_first"] = first.index(s)
        f.write(json.dumps(row) + "\n")

# ---- the hardware file
head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()[:12] or "unknown"
today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
src_run = f"run 12 on this H100 ({date_probe}, probe commit {commit_probe})"
fit = lambda: f"fitted_from: [{REL}{ALONE}, {REL}{NCU0}, {REL}{NCUR}], fitted_on: {today}, commit: {head}"
lt = ",".join(map(str, LINE_TARGETS))
q = lambda s: s.replace('"', "'")
y = [f"# One {mach['gpu_name']}, the lent `nvidia-h100-x1` machine ({NSM} SMs in {dev['# TPCs']} TPCs), for the sm_sharing model",
     "# (issue 19, round 6 on an H100). Written by calibrate/data/h100/make_h100_hw.py from the H100 probe's alone records",
     "# (calibrate/data/h100/README.md: date, machine, command, commit); every value but hbm_queue_kappa from this machine.",
     "name: h100-1gpu",
     f"description: 1x {mach['gpu_name']} ({NSM} SMs = {dev['# TPCs']} TPCs of {PER}), one GPU alone",
     "topology: {kind: full_mesh, gpus: 1}",
     "gpu:",
     f'  compute_units: {{value: "{NSM}", kind: measured, source: "probe machine record: sm_count {NSM}, gpu_name {q(mach["gpu_name"])} ({REL}{ALONE}, {src_run})"}}',
     f'  sms_per_tpc: {{value: "{PER}", kind: measured, source: "ncu LaunchStats of the default GEMM plans: \'# SMs\' {dev["# SMs"]}, \'# TPCs\' {dev["# TPCs"]} ({REL}{NCU0}; {q(cmd_of("--sm-targets 0 "))})"}}',
     "memory:",
     f'  fabric_bandwidth: {{value: "{C:.2f}GBps", kind: measured, source: "probe_smshare copy kernel alone, {min(plat)}..{max(plat)} blocks plateau (max of {", ".join(f"{plat[b]:.1f}" for b in sorted(plat))}): {C:.0f} GB/s read + write ({REL}{ALONE}, {src_run}; {q(cmd_of("--mode alone"))})"}}',
     "smshare:",
     f'  tile_rate_at_zero: {{value: "{r0:.6g}TFLOPs", kind: fitted, source: "least squares of the per-SM tile rate (rounds x 2 tile_m tile_n K / time, grid and tile from ncu) over the {len(pts)} plans of {len(shapes)} shapes at SM-count targets {lt} (grids {int(min(ns))}..{int(max(ns))}; rms residual {rms:.3f} TFLOP/s), predict_smshare.py\'s fit on this H100 (calibrate/data/h100/make_h100_hw.py)", {fit()}}}',
     f'  tile_rate_slope: {{value: "{slope:.6g}TFLOPs", kind: fitted, source: "the same least squares: per-SM tile rate {rl(NSM):.2f} TFLOP/s at {NSM} CTAs, {rl(64):.2f} at 64 (calibrate/data/h100/make_h100_hw.py)", {fit()}}}',
     f'  tile_rate_max: {{value: "{cap:.5g}TFLOPs", kind: fitted, source: "the per-SM tile rate with few CTAs running, r_line({NSM}) x the median over {len(ratios)} shapes of (median rate planned for 4, 8, 16 SMs) / (rate of the default plan) = {rl(NSM):.4f} x {ratio:.4f} (per-shape ratios {min(ratios):.3f}-{max(ratios):.3f}); the line reaches it at {(r0 - cap) / slope:.0f} CTAs; fit_tile_rate_cap_r5.py\'s rule, grid and tile of each plan from ncu; the GEMM alone only (calibrate/data/h100/make_h100_hw.py)", {fit()}, sigma: "{cap_sig:.3g}TFLOPs"}}',
     '  hbm_queue_kappa: {value: "0.06333", kind: derived, source: "ASSUMED, not measured on this machine: borrowed from the H200 beside fit (hw/h200-1gpu.yaml smshare.hbm_queue_kappa, round 3, calibrate/data/h200/fit_hbm_kappa_r3.py over the H200 rounds 1-2 copy/compute pairs, sigma 0.0027 there). Only beside data identifies kappa and none of this H100 may be fitted before its predictions; the stretch 1 + kappa u/(1-u) takes u = the copy kernel alone at B / THIS machine\'s memory.fabric_bandwidth, so only the coefficient is borrowed", note: "assumed (borrowed from the H200); the hardware file format has no kind assumed"}',
     "tables:",
     f'  sm_map: {{file: data/h100-sm-map.jsonl, kind: measured, source: "GPC of each SM from clusters of 4/8/16 CTAs ({REL}{GPCMAP}, probe_smshare --mode gpcmap, {src_run}): {len(groups)} GPCs of {"/".join(str(len(g)) for g in groups)} SMs; the GPC of SMs 120..123 (TPCs 60, 61) from clusters of 4..8 CTAs that ran with them (probe_smshare --mode gpcrest and gpcmap, runs 19-20 on an H100, 2026-12-06: {", ".join(REL + f for f in GPCREST)}); the GPC of SMs {left if left else "none"} (in no cluster of >= 4) ASSUMED, attached a TPC at a time to the largest GPCs no measured TPC joined, in order; TPC = SM / {PER} (ncu); the dispatcher\'s first SMs {first} from the neighbours alone at B = 1..8 ({REL}{ALONE}); the dispatch rule gives the measured set in {n_chk - bad} of {n_chk} neighbour-alone records (calibrate/data/h100/make_h100_hw.py)"}}',
     '  late_cluster_work_ids: {file: data/late-cluster-work-ids-h100.jsonl, kind: measured, source: "' + LATE_SRC + '"}',
     '  hbm_queue_kappa_by_kernel: {file: data/h100-kappa-by-kernel.jsonl, kind: fitted, source: "' + KAPPA_SRC + '"}']
open(os.path.join(ROOT, "hw", "h100-1gpu.yaml"), "w").write("\n".join(y) + "\n")
print("wrote hw/h100-1gpu.yaml and hw/data/h100-sm-map.jsonl")
