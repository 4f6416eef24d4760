#!/usr/bin/env python3
"""POST HOC (after run 2; not a prediction, not used by any model): the GEMM-beside grid with 2-CTA
cluster slots counted per GPC (two free SMs of one GPC per cluster) instead of per whole TPC. GPCs from
probe_smshare_gpcmap.jsonl (clusters of 16 give 7 groups of 16 SMs, clusters of 8 one more group of 8; SMs
120..131 appear in 2-CTA clusters only: 6 TPCs that 4-CTA clusters never use, the odd TPC of 6 GPCs,
attached here to 6 of the groups in order, which the data do not fix). The neighbour's SMs are each
point's own %smid record. Tiles over the slots and the tile-rate line as in predict_smshare.py; no HBM
stretch. Usage: /usr/bin/python3 posthoc_gpc.py"""
import json, math, os
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
par = list(range(132))
def find(x):
    while par[x] != x:
        par[x] = par[par[x]]
        x = par[x]
    return x
for l in open(os.path.join(HERE, "probe_smshare_gpcmap.jsonl")):
    d = json.loads(l)
    if d["cluster"] < 4: continue
    s = [int(v) for v in d["smids"]]
    for i in range(0, len(s), d["cluster"]):
        for v in s[i + 1:i + d["cluster"]]: par[find(v)] = find(s[i])
groups = {}
for i in range(120): groups.setdefault(find(i), []).append(i)
groups = sorted(groups.values(), key=lambda g: g[0])
odd = [g for g in groups if len(g) == 16][:6]
for g, t in zip(odd, range(120, 132, 2)): g += [t, t + 1]
gid = {s: i for i, g in enumerate(groups) for s in g}
assert len(gid) == 132
fit = json.load(open(os.path.join(HERE, "smshare_predictions.json")))["fit"]
r = lambda n: fit["r0_TFLOPs_per_SM"] - fit["beta_TFLOPs_per_SM_per_CTA"] * n
kern = {(k["m"], k["n"], k["k"]): k for k in json.load(open(os.path.join(HERE, "gemm_kernels_ncu.json"))) if k["sm_target"] == 0}
err = []
for l in open(os.path.join(HERE, "probe_smshare_beside.jsonl")):
    d = json.loads(l)
    if d["measure"] != "gemm_beside": continue
    k = kern[(d["m"], d["n"], d["k"])]
    held = [0] * len(groups)
    for s in d["smids"]: held[gid[int(s)]] += 1
    slots = min(k["grid"], sum(2 * ((len(g) - h) // 2) for g, h in zip(groups, held)))
    tiles = math.ceil(k["n"] / k["tile_m"]) * math.ceil(k["m"] / k["tile_n"])
    t_tile = k["time_us"] / math.ceil(tiles / k["grid"]) * r(k["grid"]) / r(slots)
    p = math.ceil(tiles / slots) * t_tile
    err.append(100 * (p - d["time_us"]) / d["time_us"])
    print(f"{d['m']}x{d['n']}x{d['k']} {d['neighbour']:7s} B={d['blocks']:2d} slots={slots:3d} pred {p:8.1f} meas {d['time_us']:8.1f} {err[-1]:+6.1f}%")
e = np.abs(err)
print(f"post hoc, GPC-parity cluster slots: {len(e)} points, median |error| {np.median(e):.2f}%, max {e.max():.2f}%")
