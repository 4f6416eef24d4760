#!/usr/bin/env python3
"""Round 3 of issue 19: writes hw/data/h200-sm-map.jsonl, the H200's SMs by GPC and TPC and the block
dispatcher's first SMs (the table `sm_map` of hw/h200-1gpu.yaml, read by hw::SmMap), and checks the
dispatch rule of hw::dispatch_placement against every neighbour-alone %smid record of rounds 1-3.

Sources: GPCs from run 4 (probe_smshare_gpcmap.jsonl, commit dd2f3a7eb59f, 2026-12-02T02:58Z): SMs of one
cluster of 4, 8 or 16 CTAs share a GPC, which gives 7 groups of 16 SMs and one of 8; SMs 120..131 (6
TPCs) appear only in 2-CTA clusters, so their GPC is NOT measured: they are attached to GPCs 1..6 in
order (the assumption of posthoc_gpc.py, kept). TPC = SM id / 2 (ncu LaunchStats: 132 SMs, 66 TPCs).
First SMs: the alone records of B = 1, 2, 4, 8 (124, 126, 128, 130, then 125, 127, 129, 131).
Usage: /usr/bin/python3 make_sm_map_r3.py"""
import json, os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
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
for g, t in zip([g for g in groups if len(g) == 16][:6], range(120, 132, 2)): g += [t, t + 1]
gid = {s: i for i, g in enumerate(groups) for s in g}
assert len(gid) == 132
FIRST = [124, 126, 128, 130, 125, 127, 129, 131]
with open(os.path.join(ROOT, "hw", "data", "h200-sm-map.jsonl"), "w") as f:
    for s in range(132):
        row = {"sm": s, "gpc": gid[s], "tpc": s // 2}
        if s in FIRST: row["dispatch_first"] = FIRST.index(s)
        f.write(json.dumps(row) + "\n")

def dispatch(B):
    """hw::dispatch_placement (the same rule)."""
    out = FIRST[:B]
    used = set(out)
    G = len(groups)
    lanes = []
    for g in range(G):
        tp = sorted({s // 2 for s in groups[g]})
        lanes.append([[s for s in sorted(groups[g]) if s // 2 == t] for t in tp])
    lane = 0
    while len(out) < min(B, 132) and lane < 2:
        q = [[t[lane] for t in lanes[g] if len(t) > lane and t[lane] not in used] for g in range(G)]
        nxt = [0] * G
        placed = True
        while placed and len(out) < B:
            placed = False
            for g in range(G):
                if len(out) < B and nxt[g] < len(q[g]):
                    out.append(q[g][nxt[g]]); used.add(q[g][nxt[g]]); nxt[g] += 1; placed = True
        lane += 1
    return out

bad = 0
seen = set()
for fn in ("probe_smshare_alone.jsonl", "probe_smshare_alone_r2.jsonl", "probe_smshare_alone_r3.jsonl"):
    for i, l in enumerate(open(os.path.join(HERE, fn))):
        d = json.loads(l)
        if d["measure"] != "neighbour_alone": continue
        B = d["blocks"]
        meas = {int(s) for s in d["smids"]}
        pred = set(dispatch(B))
        ok = meas == pred if B <= 132 else len(meas) == 132
        bad += not ok
        seen.add((fn, d["neighbour"], B, ok))
        if not ok: print(f"MISMATCH {fn} line {i + 1} {d['neighbour']} B={B}: measured-only {sorted(meas - pred)}, rule-only {sorted(pred - meas)}")
print(f"dispatch rule against {len(seen)} alone %smid records: {len(seen) - bad} identical sets, {bad} differ")
