#!/usr/bin/env python3
"""Round 9 of issue 19 (calibrate/data/h100/README.md "Round 9"): writes scenarios/h100-sm-sharing-r9.yaml, the GEMM
beside a copy or compute kernel of B blocks on one H100 at shapes never measured before, and the pre-registered
predictions of models::gemm_beside with round 7's hand-out (hw::HandOut::static_two_then_counter, the late clusters'
work ids from hw/h100-1gpu.yaml's table late_cluster_work_ids). Inputs, all one-kernel-alone records of run 23
(probe_smshare_alone_r9_h100.jsonl, ncu_launchstats_gemm_once_r9_h100.csv): the GEMM's alone time and launch
statistics, the neighbours' attributes and the copy kernel's bandwidth alone at each B. No case carries a placement,
a slot count or a coefficient. The grid (fixed before run 23): every candidate whose default plan is persistent
(tiles > grid) and whose kernel has a row in hbm_queue_kappa_by_kernel, in CAND order, at most 6; B = 6, 20, 32, 44;
both neighbours.

  python3 calibrate/data/h100/make_smshare_r9.py            the scenario without measured values
  python3 calibrate/data/h100/make_smshare_r9.py --predict  the same, then build/fusesim run -> smshare_predictions_r9_h100.json
  python3 calibrate/data/h100/make_smshare_r9.py --grid     the arguments of device_run_r9.sh measure
  python3 calibrate/data/h100/make_smshare_r9.py --measured the cases with run 24's beside times and their sources
Run from anywhere; paths are relative to the repository root.
"""
import csv, datetime, io, json, math, os, re, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
REL = "calibrate/data/h100"
CAND = [(3072, 3584, 8192), (2304, 4352, 8192), (1664, 6656, 8192), (2944, 3840, 8192), (3840, 2816, 8192),
        (1408, 7680, 8192), (2432, 4864, 8192), (3200, 3328, 8192), (2048, 6656, 8192), (3456, 3072, 8192)]
BLOCKS = [6, 20, 32, 44]
ALONE, NCU = "probe_smshare_alone_r9_h100.jsonl", "ncu_launchstats_gemm_once_r9_h100.csv"
ALONEM, BES = "probe_smshare_alone_r9m_h100.jsonl", "probe_smshare_beside_r9_h100.jsonl"
HW, SCEN = "hw/h100-1gpu.yaml", "scenarios/h100-sm-sharing-r9.yaml"
PRED = os.path.join(HERE, "smshare_predictions_r9_h100.json")

alone = [json.loads(l) for l in open(os.path.join(HERE, ALONE)).read().splitlines()]
gemm = {(d["m"], d["n"], d["k"]): (i + 1, d) for i, d in enumerate(alone) if d["measure"] == "gemm_alone" and d["sm_target"] == 0}
nb = {(d["neighbour"], d["blocks"]): (i + 1, d) for i, d in enumerate(alone) if d["measure"] == "neighbour_alone"}
txt = "".join(l for l in open(os.path.join(HERE, NCU)) if l.startswith('"'))
ks = {}
for r in csv.DictReader(io.StringIO(txt)):
    if "nvjet" in r["Kernel Name"]:
        ks.setdefault(int(r["ID"]), {"name": r["Kernel Name"], "grid": r["Grid Size"]})[r["Metric Name"]] = r["Metric Value"]
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
KAPPA_KERNELS = {json.loads(l)["kernel"] for l in open(os.path.join(ROOT, "hw", "data", "h100-kappa-by-kernel.jsonl")) if l.strip()}
SHAPES = [sh for sh in CAND if tiles_of(sh) > kern[sh]["grid"] and kern[sh]["kernel"] in KAPPA_KERNELS][:6]
if len(SHAPES) < 4: sys.exit(f"only {len(SHAPES)} persistent candidates: fewer than issue 19's 4 shapes")
if "--grid" in sys.argv:
    print(",".join(f"{a}x{b}x{c}" for a, b, c in SHAPES), ",".join(map(str, BLOCKS)))
    sys.exit(0)

# id -> known_miss note, written only after run 24 (none yet).
NOTES = {}

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

out = ["# A GEMM beside a kernel holding B SMs on one H100, round 9 of issue 19: shapes never measured before (their",
       f"# kernels as cuBLASLt chose them in run 23) at B = {', '.join(map(str, BLOCKS))} x 2 neighbours. Params are the components",
       "# measured alone (run 23); placement, cluster slots, the hand-out (round 7: each cluster's first two units static,",
       "# then a shared counter; the late clusters' work ids from the hardware's late_cluster_work_ids) and the HBM stretch",
       f"# are computed by models/sm_sharing from {HW}. Generated by calibrate/data/h100/make_smshare_r9.py; predictions",
       f"# pre-registered in {REL}/smshare_predictions_r9_h100.json before run 24 measured the beside times.",
       "scenario: h100-sm-sharing-r9",
       f'description: "round 9: cuBLASLt GEMM ({len(SHAPES)} new shapes) beside a copy or compute kernel of B = {", ".join(map(str, BLOCKS))} blocks on one H100"',
       f"hardware: {HW}", "model: sm_sharing", "tolerance_pct: 12", "cases:"]
for sh in SHAPES:
    k = kern[sh]
    gl, g = gemm[sh]
    for kind in ("copy", "compute"):
        for b in BLOCKS:
            nl, a = nb[(kind, b)]
            extra = f", neighbour_alone_GBps: {a['GBps']:.3f}" if kind == "copy" else ""
            cid = f"r9/{sh[0]}x{sh[1]}x{sh[2]}/{kind}/B{b}"
            out += [f"  - id: {cid}",
                    f"    params: {{m: {sh[0]}, n: {sh[1]}, k: {sh[2]}, tile_m: {k['tile_m']}, tile_n: {k['tile_n']}, grid: {k['grid']}, "
                    f"cluster: {k['cluster']}, cluster_m: {k['cluster_m']}, cluster_n: {k['cluster_n']}, kernel: {k['kernel']}, gemm_threads: {k['threads']}, "
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
    keys = ("predicted_us", "cta_slots", "late_ctas", "hbm_stretch", "hbm_queue_kappa", "hbm_queue_kappa_source", "alone_us", "neighbour_sms", "tiles", "scheduled_tiles", "late_work_ids")
    preds = [dict(id=c["id"], **{k: c[k] for k in keys if k in c}) for c in res["cases"]]
    doc = {"what": (f"ROUND 9 of issue 19: PRE-REGISTERED predictions of the GEMM beside a copy or compute kernel of B blocks on one "
                    f"H100: {len(SHAPES)} shapes never measured before ({', '.join('x'.join(map(str, s)) for s in SHAPES)}) at B = "
                    f"{', '.join(map(str, BLOCKS))}, {len(preds)} points, made by fusesim run on the committed scenario before run 24 "
                    "measures them. The model is models::gemm_beside after round 8: round 7's engine and each kernel's HBM coefficient (hbm_queue_kappa_by_kernel, fitted on rounds 6-8's copy/compute pairs)."),
           "command": " ".join(cmd), "commit": head, "engine_tree_dirty": bool(dirty),
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "hardware": f"{HW} (rate line and cap of run 12, smshare.hbm_queue_kappa borrowed from the H200, tables sm_map and late_cluster_work_ids)",
           "predictions": preds}
    json.dump(doc, open(PRED, "w"), indent=1)
    print(f"wrote {os.path.relpath(PRED, ROOT)}: {len(preds)} predictions at {head[:12]}")
