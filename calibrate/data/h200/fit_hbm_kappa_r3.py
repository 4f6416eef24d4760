#!/usr/bin/env python3
"""Round 3 of issue 19: ONE HBM queueing coefficient kappa for the GEMM beside a copy kernel, fitted once
across the four training shapes (not per shape), written into hw/h200-1gpu.yaml as smshare.hbm_queue_kappa.

Mechanism (models/sm_sharing, round 3): a copy neighbour stretches the GEMM by 1 + kappa u / (1 - u),
u = the copy kernel's bandwidth alone at its B / the HBM plateau (hw memory.fabric_bandwidth). The
placement (SMs held) is the same for the copy and the compute neighbour of the same B (the same
dispatcher), so the ratio T(copy) / T(compute) - 1 isolates the HBM effect: kappa is the least squares
through zero of that ratio against u / (1 - u) over every training pair. Training: rounds 1 and 2
(probe_smshare_beside.jsonl, probe_smshare_beside_r2.jsonl; 4 shapes x 13 B = 52 pairs) and the copy
kernel's bandwidth alone (probe_smshare_alone.jsonl, probe_smshare_alone_r2.jsonl). No round-3 shape is
used. Prints kappa, its 1-sigma (least-squares standard error), the per-shape kappas (how far one
shared coefficient is from each shape), and the rms residual of the stretch.
Usage: /usr/bin/python3 fit_hbm_kappa_r3.py"""
import json, os
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
C_HBM = 3963.19  # GB/s, hw/h200-1gpu.yaml memory.fabric_bandwidth
nb, meas = {}, {}
for f in ("probe_smshare_alone.jsonl", "probe_smshare_alone_r2.jsonl"):
    for l in open(os.path.join(HERE, f)):
        d = json.loads(l)
        if d["measure"] == "neighbour_alone" and d["neighbour"] == "copy": nb.setdefault(d["blocks"], d["GBps"])
for f in ("probe_smshare_beside.jsonl", "probe_smshare_beside_r2.jsonl"):
    for l in open(os.path.join(HERE, f)):
        d = json.loads(l)
        if d["measure"] == "gemm_beside": meas[(d["m"], d["n"], d["k"], d["neighbour"], d["blocks"])] = d["time_us"]
xs, ys, sh = [], [], []
for (m, n, k, kind, b), t in meas.items():
    if kind != "copy" or (m, n, k, "compute", b) not in meas: continue
    u = nb[b] / C_HBM
    xs.append(u / (1 - u)); ys.append(t / meas[(m, n, k, "compute", b)] - 1); sh.append(f"{m}x{n}x{k}")
xs, ys, sh = np.array(xs), np.array(ys), np.array(sh)
kappa = float(xs @ ys / (xs @ xs))
res = ys - kappa * xs
sigma = float(np.sqrt(res @ res / (len(xs) - 1) / (xs @ xs)))
print(f"kappa {kappa:.5f} +- {sigma:.5f} (1 sigma) over {len(xs)} pairs; rms residual of the stretch {np.sqrt(np.mean(res ** 2)):.4f}")
for s in sorted(set(sh)):
    i = sh == s
    ks = float(xs[i] @ ys[i] / (xs[i] @ xs[i]))
    print(f"  {s}: own kappa {ks:.4f} ({100 * (ks / kappa - 1):+.0f}% from the shared one); at u/(1-u) = 4 (B ~ 52) the shared one is "
          f"{100 * ((1 + 4 * kappa) / (1 + 4 * ks) - 1):+.1f}% off")
