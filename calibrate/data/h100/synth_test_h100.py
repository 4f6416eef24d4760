#!/usr/bin/env python3
"""TEST ONLY, writes nothing into the checkout: the H100 round-6 pipeline end to end on SYNTHETIC files.

Copies the checkout (without .git and build; build -> a link to BUILD) to TMP, commits it there in a throw-away
git repository, writes SYNTHETIC device files under the names device_run_r6.sh gives them on an H100 (the H200's
GPC records re-labelled as this machine's, GEMM times from an invented tile-rate line with noise, neighbour SM sets
from the dispatch rule on the H200 map, copy bandwidths on an invented 3350 GB/s plateau, ncu rows templated from
the H200's ncu file) and runs, in TMP:
  bash calibrate/data/h200/ingest_r6.sh probe SYN h100    (make_h100_hw.py, fusesim params, --candidates, --predict)
  build/fusesim run scenarios/h100-sm-sharing-r6.yaml
then SYNTHETIC measure files (gpu.txt, drift alone, beside = the predictions x noise) and
  bash calibrate/data/h200/ingest_r6.sh measure SYN2 h100 (--measured, fusesim check)
None of these numbers is a measurement; nothing of TMP may be copied back.

  /usr/bin/python3 calibrate/data/h100/synth_test_h100.py TMP [BUILD]   (BUILD: a folder holding fusesim; default build)
"""
import json, math, os, random, shutil, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
TMP = os.path.abspath(sys.argv[1])
BUILD = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "build"))
if os.path.exists(TMP): sys.exit(f"{TMP} exists")
sh = lambda cmd, **k: subprocess.run(cmd, shell=True, check=True, **k)
sh(f"mkdir -p {TMP} && cd {ROOT} && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t {TMP} 2>/dev/null; true")
os.symlink(BUILD, os.path.join(TMP, "build"))
sh(f"cd {TMP} && git init -q && git add -A && git -c user.name=synth -c user.email=synth@x commit -qm synthetic-test")
H2 = os.path.join(ROOT, "calibrate", "data", "h200")
rnd = random.Random(6)
COMMIT = "5" * 40
DATE = "2026-12-06T00:00:00Z"
MACHINE = {"platform": "cuda", "gpu_name": "NVIDIA H100 80GB HBM3", "gpu_count": 1, "devices_used": [0], "sm_count": 132,
           "compute_capability": "9.0", "hostname": "synthetic"}
CAND = [(3072, 4608, 8192), (3456, 3840, 8192), (2304, 3840, 8192), (2688, 4608, 8192), (2880, 3072, 8192),
        (4096, 3072, 8192), (2048, 2048, 6144), (1920, 2304, 8192)]
CANDB = [3, 5, 7, 9, 11, 13, 14, 15, 17, 19, 21, 23, 25, 27, 29, 30, 31, 41, 42, 43, 44, 45, 46]
TGT = [0, 128, 124, 116, 100, 99, 84, 66, 16, 8, 4]
K256 = ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT", 256, 128)
K192 = ("nvjet_sm90_tst_192x192_64x4_2x1_v_bz_coopB_TNN", 192, 192)
rate = lambda n: min(6.9 - 0.0105 * n, 6.25) * (1 + rnd.gauss(0, 0.01))  # invented (TFLOP/s per SM)

def kernel(s, t):
    kn, tm, tn = K192 if s[0] % 192 == 0 and s[1] % 192 == 0 and s != (2304, 3840, 8192) else K256
    tiles = math.ceil(s[1] / tm) * math.ceil(s[0] / tn)
    g = min(tiles, t or 132); g -= g % 2
    return kn, tm, tn, tiles, g

out = os.path.join(TMP, "SYN"); os.makedirs(out)
rec = lambda d: json.dumps(dict(probe="smshare", commit=COMMIT, date=DATE, machine=MACHINE, **d))
# gpcmap: the H200's records relabelled (a map kept, as the brief allows)
shutil.copy(os.path.join(H2, "probe_smshare_gpcmap.jsonl"), os.path.join(out, "gpcmap_h100.jsonl"))
# alone: GEMM plans, then neighbours
L = []
for s in CAND:
    for t in TGT:
        kn, tm, tn, tiles, g = kernel(s, t)
        us = math.ceil(tiles / g) * 2.0 * tm * tn * s[2] / (rate(g) * 1e12) * 1e6
        L.append(rec(dict(measure="gemm_alone", dtype="bf16", m=s[0], n=s[1], k=s[2], sm_target=t, iters=15, time_us=round(us, 3))))
rows = [json.loads(l) for l in open(os.path.join(ROOT, "hw", "data", "h200-sm-map.jsonl"))]
first = [r["sm"] for r in sorted((r for r in rows if "dispatch_first" in r), key=lambda r: r["dispatch_first"])]
G = max(r["gpc"] for r in rows) + 1
def place(B):
    o = first[:B]; used = set(o)
    lanes = [[[r["sm"] for r in rows if r["gpc"] == g and r["tpc"] == t] for t in sorted({r["tpc"] for r in rows if r["gpc"] == g})] for g in range(G)]
    for lane in range(2):
        q = [[t[lane] for t in lanes[g] if len(t) > lane and t[lane] not in used] for g in range(G)]
        nx = [0] * G; placed = True
        while placed and len(o) < B:
            placed = False
            for g in range(G):
                if len(o) < B and nx[g] < len(q[g]):
                    o.append(q[g][nx[g]]); used.add(q[g][nx[g]]); nx[g] += 1; placed = True
    return o if B <= 132 else [s % 132 for s in range(B)]
for kind in ("copy", "compute"):
    for B in [1, 2, 4, 6, 8] + CANDB + [132, 264, 528]:
        d = dict(measure="neighbour_alone", neighbour=kind, blocks=B, threads=512, regs_per_thread=16 if kind == "copy" else 32,
                 smids=place(B), time_us=10.0)
        if kind == "copy": d["GBps"] = round(3350 * (1 - math.exp(-B / 40)) * (1 + rnd.gauss(0, 0.003)), 2)
        L.append(rec(d))
open(os.path.join(out, "alone_r6_h100.jsonl"), "w").write("\n".join(L) + "\n")
# ncu: one H200 launch's rows as the template, 2 launches per plan
tmpl = [l for l in open(os.path.join(H2, "ncu_launchstats_gemm_once_r5.csv")) if l.startswith('"4",')]
head = next(l for l in open(os.path.join(H2, "ncu_launchstats_gemm_once_r5.csv")) if l.startswith('"ID"'))
def ncu(targets, fn):
    o, i = [head], 0
    for s in CAND:
        for t in targets:
            kn, tm, tn, tiles, g = kernel(s, t)
            for _ in range(2):
                i += 1
                for l in tmpl:
                    l = l.replace('"4",', f'"{i}",', 1).replace("nvjet_sm90_tst_192x192_64x4_2x1_v_bz_coopB_TNN", kn)
                    l = l.replace('"(2, 66, 1)"', f'"({g // 2}, 2, 1)"')
                    l = l.replace('"Grid Size","","132"', f'"Grid Size","","{g}"').replace('"Threads","thread","50,688"', f'"Threads","thread","{384 * g:,}"')
                    o.append(l)
    open(os.path.join(out, fn), "w").write("".join(o))
ncu([0], "ncu_r6_h100.csv"); ncu(TGT[1:], "ncu_rates_h100.csv")
open(os.path.join(out, "commands_h100.txt"), "w").write(
    "# GPU: NVIDIA H100 80GB HBM3 (SYNTHETIC)\nprobe_smshare --mode gpcmap --commit X\n"
    "probe_smshare --mode alone --shapes ... --sm-targets 0,128,124,116,100,99,84,66,16,8,4 --blocks ... --commit X\n"
    "ncu --clock-control none ... probe_smshare --mode gemm_once --shapes ... --sm-targets 0 --commit X\n"
    "ncu --clock-control none ... probe_smshare --mode gemm_once --shapes ... --sm-targets 128,124,116,100,99,84,66,16,8,4 --commit X\n")
open(os.path.join(out, "smi_h100.txt"), "w").write("SYNTHETIC | NVIDIA H100 80GB HBM3 |\n")

print("==== ingest probe (synthetic)", flush=True)
sh(f"cd {TMP} && bash calibrate/data/h200/ingest_r6.sh probe SYN h100")
print("==== fusesim run", flush=True)
sh(f"cd {TMP} && build/fusesim run scenarios/h100-sm-sharing-r6.yaml | tail -8")
# measure (synthetic): the predictions x noise
pred = json.load(open(os.path.join(TMP, "calibrate", "data", "h100", "smshare_predictions_r6_h100.json")))
out2 = os.path.join(TMP, "SYN2"); os.makedirs(out2)
open(os.path.join(out2, "gpu.txt"), "w").write("NVIDIA H100 80GB HBM3\n")
for f in ("commands.txt", "smi.txt"): open(os.path.join(out2, f), "w").write("SYNTHETIC\n")
B = []
for p in pred["predictions"]:
    _, s, kind, b = p["id"].split("/")
    m, n, k = map(int, s.split("x"))
    B.append(rec(dict(measure="gemm_beside", dtype="bf16", m=m, n=n, k=k, neighbour=kind, blocks=int(b[1:]),
                      time_us=round(p["predicted_us"] * (1 + rnd.gauss(0, 0.04)), 3))))
open(os.path.join(out2, "beside_r6.jsonl"), "w").write("\n".join(B) + "\n")
A = [json.loads(l) for l in open(os.path.join(out, "alone_r6_h100.jsonl"))]
open(os.path.join(out2, "alone_r6m.jsonl"), "w").write("\n".join(
    json.dumps(dict(d, time_us=d["time_us"] * 1.01)) for d in A if d.get("sm_target", 0) == 0) + "\n")
print("==== ingest measure (synthetic)", flush=True)
r = subprocess.run(f"cd {TMP} && bash calibrate/data/h200/ingest_r6.sh measure SYN2 h100", shell=True)
print(f"ingest measure rc {r.returncode} (fusesim check's rc: non-zero where a synthetic point misses 12%)")
