#!/usr/bin/python3
"""Convert allreduce_standalone.jsonl (29 public records, copied unchanged from the shared data
folder) into the collective model's measurement records (allreduce_standalone.records.jsonl) and the
component scenario scenarios/mi355x-components-allreduce.yaml. Run from the repository root:
    /usr/bin/python3 calibrate/data/mori-public/make_allreduce_records.py
Conversions: backend nccl -> rccl (mori's bench calls the library collective nccl; on ROCm it is
RCCL); op all-reduce; the SDMA rows of @0f4d2776 get build 0f4d2776, those of @e7606746 build
e7606746; the M=16384 SDMA row (bench_gemm_ar.py's docstring, @fc892894) names no kernel build and is
left at the default build (the later, e7606746)."""
import json, pathlib

here = pathlib.Path(__file__).resolve().parent
root = here.parents[2]
raw = [json.loads(l) for l in (here / "allreduce_standalone.jsonl").read_text().splitlines() if l.strip()]
records = []
for r in raw:
    p = {"op": "all-reduce", "backend": "rccl" if r["backend"] == "nccl" else r["backend"], "m": r["m"], "n": r["n"],
         "world_size": r["world_size"], "dtype": r["dtype"]}
    if r["backend"] == "sdma":
        if "@0f4d2776" in r["source"]:
            p["build"] = "0f4d2776"
        elif "@e7606746" in r["source"]:
            p["build"] = "e7606746"
    commit = r["source"].split("@")[1].split()[0]
    bench = "gemm_ar/bench_gemm_ar.py" if "bench_gemm_ar" in r["source"] else "ar/bench_ar.py"
    records.append({
        "params": p, "value_us": r["value_us"], "source": r["source"],
        "date": None, "date_note": "the public tables state no measurement date; transcribed 2026-12-02",
        "machine": "8x MI355X (gfx950), as the source states", "commit": f"ROCm/mori@{commit}",
        "command": f"torchrun --nproc_per_node=8 benchmark/cco/flydsl/{bench} (the source's table; flags not printed)",
        "note": ("backend nccl in the source: the library collective (RCCL on ROCm)" if r["backend"] == "nccl" else
                 "SDMA row without a named kernel build: the default build" if r["backend"] == "sdma" and "build" not in p else None),
    })
    if records[-1]["note"] is None:
        del records[-1]["note"]
(here / "allreduce_standalone.records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))

# The scenario: one case per (backend, build) with its M sweep and every measured point.
groups = {}
for r in records:
    p = r["params"]
    key = (p["backend"], p.get("build", ""))
    groups.setdefault(key, []).append(r)
order = [("lsa", ""), ("sdma", "0f4d2776"), ("sdma", "e7606746"), ("sdma", ""), ("aiter", ""), ("rccl", "")]
lines = [
    "# The collective on its own: ROCm/mori's public standalone all-reduce times on 8x MI355X (gfx950),",
    "# [M, 7168] bf16 over 8 ranks: bench_ar.py's docstring tables (LSA, SDMA on two kernel builds, aiter's",
    "# custom all-reduce; best of 3) and bench_gemm_ar.py's docstring (LSA, SDMA, NCCL at M=16384). Records",
    "# and sources: calibrate/data/mori-public/allreduce_standalone.records.jsonl (made with this file by",
    "# make_allreduce_records.py). The collective-describing values of hw/mi355x-8gpu.yaml are fitted on",
    "# these points alone (README, \"The collective model\").",
    "scenario: mi355x-components-allreduce",
    "description: \"standalone all-reduce [M,7168] bf16, 8x MI355X: LSA, SDMA (two builds), aiter, RCCL\"",
    "hardware: hw/mi355x-8gpu.yaml",
    "model: collective",
    "tolerance_pct: 10",
    "defaults: {op: all-reduce, n: 7168, world_size: 8, dtype: bf16}",
    "",
    "cases:",
]
for key in order:
    if key not in groups:
        continue
    b, build = key
    rs = sorted(groups[key], key=lambda r: r["params"]["m"])
    cid = b + (f"/{build}" if build else ("/default-build" if b == "sdma" else ""))
    params = {"backend": b}
    if build:
        params["build"] = build
    lines.append(f"  - id: {cid}")
    lines.append("    params: {" + ", ".join(f"{k}: {v}" for k, v in params.items()) + "}")
    lines.append("    sweep: {m: [" + ", ".join(str(r["params"]["m"]) for r in rs) + "]}")
    lines.append("    measured:")
    for r in rs:
        lines.append(f"      - {{at: {{m: {r['params']['m']}}}, value_us: {r['value_us']}, source: {json.dumps(r['source'])}}}")
(root / "scenarios" / "mi355x-components-allreduce.yaml").write_text("\n".join(lines) + "\n")
