#!/usr/bin/env python3
"""Print a compact summary of fusesim's GPU probe results.

usage: summarize_probes.py DIR
DIR holds the JSONL files written by hw/kernels/run_all_probes.sh (hbm_copy, peer_copy, cu_remote,
launch, gemm, interference). Missing files are skipped. Standard library only.
"""
import json
import os
import sys


def load(d, name):
    path = os.path.join(d, name + ".jsonl")
    if not os.path.exists(path):
        return []
    out = []
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def fmt(x, nd=1):
    return "-" if x is None else f"{x:.{nd}f}"


def size_label(b):
    for unit, s in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= s:
            return f"{b // s}{unit}"
    return str(b)


def main():
    d = sys.argv[1]
    rows = load(d, "launch")
    if rows:
        m = rows[0]["machine"]
        print(f"machine: {m['gpu_name']} x{m['gpu_count']} driver {m['driver']} SMs {m['sm_count']} "
              f"max SM {m['sm_clock_max_mhz']} MHz nvlinks {m['nvlink_active_links']} commit {rows[0]['commit'][:12]}")
        print("launch: " + "  ".join(f"{r['quantity']}={fmt(r['time_us'], 2)}" for r in rows))

    rows = load(d, "hbm_copy")
    if rows:
        print("hbm_copy GBps (read+write):")
        for meth in ("memcpy", "kernel", "reduce2_bf16"):
            pts = [r for r in rows if r["method"] == meth and r["size_bytes"] >= (1 << 20) and
                   (r["size_bytes"].bit_length() - 1) % 2 == 0]
            print(f"  {meth:>13}: " + " ".join(f"{size_label(r['size_bytes'])}={fmt(r['GBps'], 0)}" for r in pts))

    rows = load(d, "peer_copy")
    if rows:
        print("peer_copy (copy engine): time_us / GBps")
        cfgs = sorted({(r["direction"], r["issuer"], r["streams"]) for r in rows})
        for c in cfgs:
            pts = [r for r in rows if (r["direction"], r["issuer"], r["streams"]) == c and
                   (r["size_bytes"].bit_length() - 1) % 2 == 0]
            print(f"  {c[0]:>4} {c[1]} s={c[2]}: " +
                  " ".join(f"{size_label(r['size_bytes'])}={fmt(r['time_us'], 1)}/{fmt(r['GBps'], 0)}" for r in pts))

    rows = load(d, "cu_remote")
    if rows:
        print("cu_remote GBps (blocks sweep, 512 thr, 16B x4):")
        for both in (False, True):
            for mode in ("pull", "push"):
                pts = [r for r in rows if r["sweep"] == "blocks" and r["mode"] == mode and r["both"] == both]
                if pts:
                    print(f"  {mode}{' both' if both else ''}: " +
                          " ".join(f"{r['blocks']}={fmt(r['GBps'], 0)}" for r in pts))
        for sweep in ("threads", "in_flight", "lsa_reduce"):
            pts = [r for r in rows if r["sweep"] == sweep]
            if pts:
                print(f"  {sweep}: " + " ".join(
                    f"{r['mode'][:4]}{'*' if r['both'] else ''}/b{r['blocks']}/t{r['threads']}/v{r['vec_bytes']}x{r['unroll']}"
                    f"={fmt(r['GBps'], 0)}" for r in pts))

    rows = load(d, "gemm")
    if rows:
        print("gemm TFLOP/s (time_us):")
        for dt in ("bf16", "fp8_e4m3"):
            for sweep in ("m", "k", "n"):
                pts = [r for r in rows if r["dtype"] == dt and r["sweep"] == sweep]
                if pts:
                    print(f"  {dt} {sweep}-sweep: " + " ".join(
                        f"{r['m']}x{r['n']}x{r['k']}=" + ("ERR" if "error" in r else f"{fmt(r['TFLOPs'], 0)}({fmt(r['time_us'], 0)})")
                        for r in pts))
        pts = [r for r in rows if r["sweep"] == "banded"]
        if pts:
            print("  banded bf16 time_us: " + " ".join(f"{r['m']}x{r['n']}/b{r['bands']}={fmt(r['time_us'], 0)}" for r in pts))
        errs = [r for r in rows if "error" in r]
        for r in errs[:3]:
            print("  error:", r["error"])

    rows = load(d, "interference")
    if rows:
        print("interference:")
        for r in rows:
            if r["measure"] == "gemm_time":
                print(f"  gemm m={r['m']} under {r['background']:>18}: {fmt(r['time_us'])} us x{fmt(r['slowdown'], 3)}")
            else:
                print(f"  xfer m={r['m']} {r['foreground']:>18} under gemm: {fmt(r['GBps'], 0)} GBps "
                      f"(alone {fmt(r['alone_GBps'], 0)}) x{fmt(r['slowdown'], 3)}")


if __name__ == "__main__":
    main()
