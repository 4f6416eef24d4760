#!/usr/bin/env python3
"""Pre-registered prediction of a GEMM beside a kernel that holds B SMs (issue 19), from the
one-kernel-alone probes only (probe_smshare_alone.jsonl, gemm_kernels_ncu.json). Writes
smshare_predictions.json. The model (the same one models/sm_sharing implements):

- SM pool in TPC units: 132 SMs = 66 TPCs of 2 SMs. A neighbour of B blocks holds the TPCs its blocks
  landed on when launched alone (distinct_tpcs of its neighbour_alone line, from %smid). The GEMM
  kernel (168 registers x 384 threads = the whole 64 K register file, ~200 KB shared memory: 1 block
  per SM, ncu LaunchStats) cannot share an SM with a neighbour block, and its 2-CTA clusters take
  whole free TPCs (the previous round's post-hoc finding, adopted before this round's measurement).
- The GEMM's tiles (tile shape and grid from the kernel name and ncu) run in waves over the CTA
  slots free when they are scheduled: slots = min(grid, cluster x free TPCs); when the neighbour ends
  (after cover x the GEMM's alone time, as the probe sizes it) every slot is free.
- Per-tile time with n CTAs running: t(n) = t_alone_tile x r(G)/r(n), t_alone_tile = GEMM alone time /
  ceil(tiles / G), r(n) = r0 - beta n the per-SM tile rate fitted (least squares) on the SM-count-target
  sweep (each plan: 2 tile_m tile_n K per tile over time / ceil(tiles/grid)).
- HBM (copy neighbour): proportional sharing of the copy kernel's saturated bandwidth C (its 132..528
  block plateau): the GEMM, with its compulsory bytes (X, W read once, C written once) over its compute
  time as demand, stretches by max(1, (copy_alone_GBps(B) + gemm_demand) / C).
"""
import json, math, os, re, sys
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
alone = [json.loads(l) for l in open(os.path.join(HERE, "probe_smshare_alone.jsonl"))]
kern = json.load(open(os.path.join(HERE, "gemm_kernels_ncu.json")))
COVER = 20.0
TPCS = 66

def tiles_of(k):
    return math.ceil(k["n"] / k["tile_m"]) * math.ceil(k["m"] / k["tile_n"])

# r(n) fit over the SM-target sweep
ns, rs = [], []
for k in kern:
    rounds = math.ceil(tiles_of(k) / k["grid"])
    ns.append(k["grid"]); rs.append(2 * k["tile_m"] * k["tile_n"] * k["k"] / (k["time_us"] / rounds * 1e-6) / 1e12)
A = np.vstack([np.ones(len(ns)), -np.array(ns, float)]).T
(r0, beta), res, *_ = np.linalg.lstsq(A, np.array(rs), rcond=None)
resid = np.array(rs) - A @ np.array([r0, beta])
def r(n): return r0 - beta * n

nb = {(d["neighbour"], d["blocks"]): d for d in alone if d["measure"] == "neighbour_alone"}
C_hbm = max(d["GBps"] for d in alone if d["measure"] == "neighbour_alone" and d["neighbour"] == "copy")

def predict(k, kind, B):
    G, cl, T0 = k["grid"], k["cluster"], k["time_us"]
    tiles = tiles_of(k)
    t_tile0 = T0 / math.ceil(tiles / G)
    held = nb[(kind, B)]["distinct_tpcs"]
    slots_nb = min(G, cl * max(0, TPCS - held))
    D = COVER * T0
    # event simulation: slots pick tiles; a tile's time is t(n) for the n slots running at its start
    t, left, free_at = 0.0, tiles, []
    import heapq
    slots = [0.0] * slots_nb
    heapq.heapify(slots)
    extra_added = False
    end = 0.0
    while left > 0:
        s = heapq.heappop(slots)
        if not extra_added and s >= D:
            for _ in range(G - slots_nb): heapq.heappush(slots, D)
            extra_added = True
            heapq.heappush(slots, s); continue
        n = slots_nb if s < D else G
        if n == 0: s = D; n = G
        dt = t_tile0 * r(G) / r(n)
        left -= 1
        end = max(end, s + dt)
        heapq.heappush(slots, s + dt)
        if slots_nb == 0 and not extra_added:
            slots = [D] * G; heapq.heapify(slots); extra_added = True
    T = end
    hbm = 1.0
    if kind == "copy":
        gbytes = 2.0 * (k["m"] * k["k"] + k["n"] * k["k"] + k["m"] * k["n"])
        demand = gbytes / (T * 1e-6) / 1e9
        hbm = max(1.0, (nb[(kind, B)]["GBps"] + demand) / C_hbm)
    return T * hbm, dict(held_tpcs=held, cta_slots=slots_nb, tiles=tiles, grid=G, cluster=cl, hbm_stretch=hbm)

preds = []
for k in kern:
    if k["sm_target"] != 0: continue
    for kind in ("copy", "compute"):
        for B in (4, 8, 16, 24, 33, 48, 66):
            T, info = predict(k, kind, B)
            preds.append(dict(m=k["m"], n=k["n"], k=k["k"], neighbour=kind, blocks=B, predicted_us=round(T, 3),
                              alone_us=k["time_us"], slowdown=round(T / k["time_us"], 4), **info))
out = dict(model="sm_sharing (pre-registered, issue 19)", cover=COVER,
           fit=dict(r0_TFLOPs_per_SM=r0, beta_TFLOPs_per_SM_per_CTA=beta, points=len(ns),
                    rms_resid_TFLOPs=float(np.sqrt(np.mean(resid ** 2))), hbm_capacity_GBps=C_hbm),
           predictions=preds)
json.dump(out, open(os.path.join(HERE, "smshare_predictions.json"), "w"), indent=1)
print(json.dumps(out["fit"]))
for p in preds: print(p["m"], p["n"], p["k"], p["neighbour"], p["blocks"], p["predicted_us"], p["slowdown"], p["cta_slots"], round(p["hbm_stretch"], 3))
