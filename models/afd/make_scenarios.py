#!/usr/bin/env python3
"""Write scenarios/h200x4-afd*.yaml and scenarios/h100-ib-afd*.yaml from seed 004.

Every measured value is copied with its JSON path in the seed as `source`; withheld sets
(3A:1F SM sweep, 4F:12A) become prediction-only scenarios. Usage: make_scenarios.py SEED REPO_ROOT
"""
import json, re, sys
from pathlib import Path

seed_path, root = sys.argv[1], Path(sys.argv[2])
d = json.load(open(seed_path))
SEED = "seed004"
out = root / "scenarios"
out.mkdir(exist_ok=True)

def fmt_params(p):
    return "{" + ", ".join(f"{k}: {json.dumps(v) if isinstance(v, str) else ('true' if v is True else 'false' if v is False else v)}" for k, v in p.items()) + "}"

def write(name, scenario, hardware, desc, cases, tol=12):
    lines = [f"scenario: {scenario}", f"hardware: {hardware}", "description: >-"]
    lines += ["  " + l for l in desc.strip().splitlines()]
    lines += ["model: afd", f"tolerance_pct: {tol}", "cases:"]
    for c in cases:
        lines.append(f"  - id: {c['id']}")
        lines.append(f"    params: {fmt_params(c['params'])}")
        if "sweep" in c:
            lines.append("    sweep: {" + ", ".join(f"{k}: {json.dumps(v)}" for k, v in c["sweep"].items()) + "}")
        if "measured" in c:
            m = c["measured"]
            lines.append("    measured:")
            for k in ("value_us", "period_us"):
                if k in m: lines.append(f"      {k}: {round(m[k], 3)}")
            if "kernels" in m:
                lines.append("      kernels:")
                for k in m["kernels"]:
                    lines.append(f"        - {{device: {k['device']}, kernel: {k['kernel']}, start_us: {k['start_us']}, end_us: {k['end_us']}}}")
            lines.append(f"      source: {json.dumps(m['source'])}")
        lines.append(f"    tolerance_pct: {c.get('tol', tol)}")
    (out / name).write_text("\n".join(lines) + "\n")

H200 = "hw/h200-4gpu-nvlink.yaml"
H100 = "hw/h100-ib-pods.yaml"
base = dict(hidden=2048, topk=8, payload="bf16")
def split(a, f):
    return dict(attention_ranks=a, ffn_ranks=f, experts=96 if (a, f) == (1, 3) else 128)

# 1. 2A:2F transport-SM sweep
sw = d["transport_sm_sweep_all_kernels"]["2a2f"]
cases = []
for T in sorted(sw, key=int):
    for sm in sorted(sw[T], key=int):
        cases.append(dict(id=f"2a2f-t{T}-sm{sm}", params=dict(path="afd", **split(2, 2), tokens=int(T), transport_sms=int(sm), **base),
                          measured=dict(value_us=sw[T][sm], source=f"{SEED} transport_sm_sweep_all_kernels.2a2f.{T}.{sm} (median over 5 blocks of max Attention-rank us)")))
write("h200x4-afd-2a2f-sm-sweep.yaml", "h200x4-afd-2a2f-sm-sweep", H200,
      "2A:2F transport-SM sweep, all kernels of one exchange (seed 004). Flat at T=1, falling with SMs at T >= 512.", cases)

# 2. kernel timelines
cases = []
rx = re.compile(r"dev(\d+) \d+:(\w+) start (-?[\d.]+) end (-?[\d.]+) dur")
for key, lines in sorted(d["kernel_timelines"]["traces"].items()):
    m = re.match(r"(\d)a(\d)f-t(\d+)-(\w+)", key)
    a, f, T, path = int(m[1]), int(m[2]), int(m[3]), m[4]
    period = float(re.search(r"period median ([\d.]+)", lines[1])[1])
    ks = [dict(device=int(g[1]), kernel=g[2], start_us=float(g[3]), end_us=float(g[4])) for l in lines for g in [rx.search(l)] if g]
    cases.append(dict(id=key, params=dict(path=path, **split(a, f), tokens=T, transport_sms=24, **base),
                      measured=dict(period_us=period, kernels=ks, source=f"{SEED} kernel_timelines.traces.{key} (nsys medians over 150 exchanges; period median and per-device kernel start/end)"),
                      tol=15))
write("h200x4-afd-timelines.yaml", "h200x4-afd-timelines", H200,
      "Per-kernel timelines (start, end per device, common clock anchored at the first Attention device's\n"
      "dispatch) for 1A:3F, 2A:2F, 3A:1F at T in {1,128,512,2048}, afd and masked paths; period median per exchange.\n"
      "Devices 0..F-1 are FFN ranks, F..3 Attention ranks. Durations checked within 15% at T >= 128.", cases, tol=15)

# 3. FFN-only combine grid screen (3A:1F, collect view)
scr = d["ffn_only_combine_grid_scratch"]["screen_3a1f_collect_view"]
cases = []
for row in scr["table"]:
    T = row["tokens"]
    for arm in ["base", "s24", "s48", "s64", "s96", "s132"]:
        p = dict(path="afd", **split(3, 1), tokens=T, transport_sms=24, **base, view="collect")
        if arm != "base":
            p["ffn_combine_sms"] = int(arm[1:]); p["grid_sync_exit"] = True
        cases.append(dict(id=f"3a1f-t{T}-{arm}", params=p, measured=dict(value_us=row[arm]["median_us"],
             source=f"{SEED} ffn_only_combine_grid_scratch.screen_3a1f_collect_view.table[tokens={T}].{arm}.median_us")))
write("h200x4-afd-3a1f-combine-grid.yaml", "h200x4-afd-3a1f-combine-grid", H200,
      "3A:1F FFN-only combine grid screen (AFDEP_SCRATCH_FFN_COMBINE_SMS, arms other than base run\n"
      "AFDEP_GRID_SYNC_EXIT=1), collect view, median of 3 paired repeats.", cases)

# 4. role path vs masked (3A:1F)
scr = d["combine_grid_role_path_vs_masked"]["screen_3a1f_collect_view"]
cases = []
for row in scr["table"]:
    T = row["tokens"]
    for arm in ["afd", "afd_c64", "masked", "masked_c64"]:
        p = dict(path="masked" if arm.startswith("masked") else "afd", **split(3, 1), tokens=T, transport_sms=24, **base, view="collect")
        if arm.endswith("c64"): p["combine_sms"] = 64
        cases.append(dict(id=f"3a1f-t{T}-{arm}", params=p, measured=dict(value_us=row[arm]["median_us"],
             source=f"{SEED} combine_grid_role_path_vs_masked.screen_3a1f_collect_view.table[tokens={T}].{arm}.median_us")))
write("h200x4-afd-3a1f-role-path.yaml", "h200x4-afd-3a1f-role-path", H200,
      "3A:1F combine grid for every rank (AFDEP_SCRATCH_COMBINE_SMS=64) on the role path (afd) and the\n"
      "role-unaware masked path; AFD vs masked at T in {1,32,512,2048}. Collect view.", cases)

# 5. 3A:1F transport-SM sweep: prediction only (withheld in the seed)
write("h200x4-afd-3a1f-sm-sweep.yaml", "h200x4-afd-3a1f-sm-sweep", H200,
      "3A:1F transport-SM sweep: PREDICTION ONLY (transport_sm_sweep_all_kernels.3a1f is withheld in seed 004).",
      [dict(id="3a1f-sm-sweep", params=dict(path="afd", **split(3, 1), tokens=1, transport_sms=24, **base),
            sweep=dict(tokens=[1, 128, 512, 2048], transport_sms=[8, 12, 16, 24, 32, 48, 64]))])

# 6. cross-node channel sweeps (S=1, S=2) and direct vs hybrid, AFD vs masked
ps = d["per_source_cost"]
cases = []
for name, s in sorted(ps["screens"].items()):
    m = re.match(r"x31c-4f(\d+)a-sms(\d+)", name)
    if not m: continue
    A, sm = int(m[1]), int(m[2])
    for row in s["table"]:
        T = row["tokens"]
        cases.append(dict(id=f"4f{A}a-sm{sm}-t{T}", params=dict(path="afd", attention_ranks=A, ffn_ranks=4, tokens=T, transport_sms=sm, experts=128, hybrid="on", **base),
                          measured=dict(value_us=row["afd"]["median_us"], source=f"{SEED} per_source_cost.screens.{name}.table[tokens={T}].afd.median_us")))
write("h100-ib-afd-channel-sweep.yaml", "h100-ib-afd-channel-sweep", H100,
      "Cross-node channel sweeps (C = 8 x transport SMs) for 4F:4A (S=1) and 4F:8A (S=2), hybrid on, T in {1,8}.", cases)
cases = []
for name, s in sorted(ps["screens"].items()):
    m = re.match(r"x31d-4f(\d+)a-(on|off)", name)
    if not m: continue
    A, hy = int(m[1]), m[2]
    for row in s["table"]:
        T = row["tokens"]
        for arm in ["afd", "masked"]:
            cases.append(dict(id=f"4f{A}a-{hy}-{arm}-t{T}", params=dict(path=arm, attention_ranks=A, ffn_ranks=4, tokens=T, transport_sms=24, experts=128, hybrid=hy, **base),
                              measured=dict(value_us=row[arm]["median_us"], source=f"{SEED} per_source_cost.screens.{name}.table[tokens={T}].{arm}.median_us")))
write("h100-ib-afd-direct-vs-hybrid.yaml", "h100-ib-afd-direct-vs-hybrid", H100,
      "Direct (hybrid off) vs hybrid (RDMA to the rail peer + NVLink forwarding), AFD vs masked, 4F:4A and\n"
      "4F:8A at 24 transport SMs, T in {1,8,32,128,512}.", cases)

# 7. 4F:12A predictions (S=3) and what-ifs
write("h100-ib-afd-4f12a.yaml", "h100-ib-afd-4f12a", H100,
      "4F:12A (three Attention domains, S=3): PREDICTION ONLY (cross_node_4f12a is withheld in seed 004).\n"
      "Model fitted on S=1 and S=2 only.",
      [dict(id="4f12a", params=dict(path="afd", attention_ranks=12, ffn_ranks=4, tokens=1, transport_sms=24, experts=128, hybrid="on", **base),
            sweep=dict(transport_sms=[16, 24, 32, 48], tokens=[1, 8, 32, 128, 512]))])
cases = []
for A in (4, 12):
    for T in (1, 128):
        for w, flags in [("base", {}), ("skip-empty", dict(skip_empty_finish=True)), ("rotate", dict(rotate_channels=True)),
                         ("sms8", dict(transport_sms=8)), ("inline", dict(inline_finish=True))]:
            p = dict(path="afd", attention_ranks=A, ffn_ranks=4, tokens=T, transport_sms=24, experts=128, hybrid="on", **base)
            p.update(flags)
            cases.append(dict(id=f"4f{A}a-t{T}-{w}", params=p))
write("h100-ib-afd-whatif.yaml", "h100-ib-afd-whatif", H100,
      "What-if protocol changes (AFD.md): no finish atomic on empty channels (one release per pair),\n"
      "token-to-channel rotation per source, fewer transport SMs (8 instead of 24), inline writes for\n"
      "data-less finishes. PREDICTION ONLY, 4F:4A and 4F:12A at T=1 and T=128.", cases)
print("wrote", sorted(p.name for p in out.glob("h*afd*.yaml")))
