#!/usr/bin/env python3
"""Issue 19: the HBM queueing coefficient kappa of each nvjet kernel on the H100, from copy/compute pairs.

The GEMM beside the copy kernel and beside the compute kernel of the same B holds the same SMs; their ratio is the
HBM stretch alone, 1 + kappa u / (1 - u), u = the copy kernel's bandwidth alone / HBM (memory.fabric_bandwidth of
hw/h100-1gpu.yaml). Each pair with u >= 0.6 (a stretch of 10% or more, where kappa is identified) gives
kappa = (copy / compute - 1) (1 - u) / u; a kernel's kappa is the median over its pairs (rounds 6, 7, 8 on one H100,
2026-12-06: probe_smshare_beside_r{6,7,8}_h100.jsonl, the copy's bandwidth from the same round's alone records, the
kernel from the round's ncu launch statistics). Writes hw/data/h100-kappa-by-kernel.jsonl (one row per kernel:
kernel, kappa, pairs, spread = half the range) and prints the table.
Run: python3 calibrate/data/h100/fit_kappa_by_kernel.py (from anywhere).
"""
import json, os, statistics, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from smshare_rounds import nvjet_launches  # noqa: E402  (the ncu reader of the round generator)

ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
U_MIN = 0.6
ROUNDS = {  # round: (beside, alone, ncu, the candidate shapes in the probe's order)
    "r6": ("probe_smshare_beside_r6_h100.jsonl", "probe_smshare_alone_r6_h100.jsonl", "ncu_launchstats_gemm_once_r6_h100.csv"),
    "r7": ("probe_smshare_beside_r7_h100.jsonl", "probe_smshare_alone_r7_h100.jsonl", "ncu_launchstats_gemm_once_r7_h100.csv"),
    "r8": ("probe_smshare_beside_r8_h100.jsonl", "probe_smshare_alone_r8_h100.jsonl", "ncu_launchstats_gemm_once_r8_h100.csv"),
}


def hbm_GBps():
    for l in open(os.path.join(ROOT, "hw", "h100-1gpu.yaml")):
        if l.strip().startswith("fabric_bandwidth:"):
            return float(l.split('value: "')[1].split("GBps")[0])
    sys.exit("hw/h100-1gpu.yaml: no memory.fabric_bandwidth")


def kernels(ncu, shapes):
    """shape -> kernel name: the second of the two nvjet launches of each shape (select run, run), in probe order."""
    ks = nvjet_launches(os.path.join(HERE, ncu))
    names = [ks[i]["name"] for i in sorted(ks)]
    if len(names) != 2 * len(shapes): sys.exit(f"{ncu}: {len(names)} nvjet launches for {len(shapes)} shapes")
    return dict(zip(shapes, names[1::2]))


H = hbm_GBps()
per = {}
for rnd, (bes, alone, ncu) in ROUNDS.items():
    rows = [json.loads(l) for l in open(os.path.join(HERE, alone))]
    shapes = list(dict.fromkeys((d["m"], d["n"], d["k"]) for d in rows if d["measure"] == "gemm_alone"))
    kern = kernels(ncu, shapes)
    gb = {d["blocks"]: d["GBps"] for d in rows if d["measure"] == "neighbour_alone" and d["neighbour"] == "copy"}
    pairs = {}
    for l in open(os.path.join(HERE, bes)):
        d = json.loads(l)
        if d["measure"] == "gemm_beside": pairs.setdefault((d["m"], d["n"], d["k"], d["blocks"]), {})[d["neighbour"]] = d["time_us"]
    for (m, n, k, b), v in sorted(pairs.items()):
        if "copy" not in v or "compute" not in v or b not in gb: continue
        u = gb[b] / H
        if u < U_MIN: continue
        kap = (v["copy"] / v["compute"] - 1) * (1 - u) / u
        per.setdefault(kern[(m, n, k)], []).append((kap, f"{rnd} {m}x{n}x{k} B={b} u={u:.2f}"))
out = []
for name in sorted(per):
    ks = [x for x, _ in per[name]]
    kap = statistics.median(ks)
    out.append({"kernel": name, "kappa": round(kap, 4), "pairs": len(ks), "spread": round((max(ks) - min(ks)) / 2, 4)})
    print(f"{name}: kappa {kap:.4f} (+- {(max(ks) - min(ks)) / 2:.4f}) from {len(ks)} pairs: " + "; ".join(f"{s} {x:.3f}" for x, s in per[name]))
with open(os.path.join(ROOT, "hw", "data", "h100-kappa-by-kernel.jsonl"), "w") as f:
    for r in out: f.write(json.dumps(r) + "\n")
print(f"wrote hw/data/h100-kappa-by-kernel.jsonl: {len(out)} kernels")
