#!/usr/bin/env python3
"""Issue 19: how much the first unit of work of nvjet's persistent clusters varies in duration across clusters, on
one H100. Measured to test whether round 10's bimodal point (a wave edge) is unit-time noise; it is not (README.md of
this folder, "The wave edge of round 10"): the value is in no hardware file and the model does not use it.

Inputs (this folder, standard library only): the completion-time records (`probe_smshare --mode tiletimes`,
measure "tile_times") of runs 15, 16 and 25 (probe_smshare_tiletimes_r15_h100.jsonl, _r16_h100.jsonl,
_run25_h100.jsonl; one NVIDIA H100 80GB HBM3, 2026-12-06; each record's command and commit are in it) with a
polling neighbour of B <= 2 blocks (the GEMM nearly alone: one or two SMs held). Each record: the write times of
C's 64x64 points (us after the launch stamp), cut into waves where the sorted times jump by more than 15 us. The
first wave holds the units every resident cluster started at launch, so the standard deviation of its write times
is the spread of one unit's duration across clusters (points weight tiles by their area). The value is the median
over records of that standard deviation (us); the script prints it with the records' spread.

  python3 calibrate/data/h100/fit_unit_jitter.py          prints the value, its inputs and spread
  python3 calibrate/data/h100/fit_unit_jitter.py --json   {"value_us": ..., "records": N, "min_us": ..., "max_us": ...}
"""
import json, os, statistics, sys

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = ["probe_smshare_tiletimes_r15_h100.jsonl", "probe_smshare_tiletimes_r16_h100.jsonl",
         "probe_smshare_tiletimes_run25_h100.jsonl"]
GAP_US = 15.0  # a jump that ends a wave (units last 50-90 us here; within a wave, writes spread over a few us)


def waves(times):
    """The sorted write times cut where they jump by more than GAP_US: a list of waves (lists of times, us)."""
    p = sorted(t for t in times if t >= 0)
    out, cur = [], [p[0]]
    for t in p[1:]:
        if t - cur[-1] > GAP_US:
            out.append(cur)
            cur = [t]
        else:
            cur.append(t)
    out.append(cur)
    return out


def fit():
    """(value_us, per-record standard deviations) over the B <= 2 tile_times records of FILES."""
    sd = []
    for f in FILES:
        for line in open(os.path.join(HERE, f)):
            d = json.loads(line)
            if d.get("measure") != "tile_times" or d["blocks"] > 2:
                continue
            w = waves(d["point_write_us"])
            if len(w) < 2:
                continue
            sd.append(statistics.pstdev(w[0]))
    if not sd:
        sys.exit("fit_unit_jitter.py: no tile_times record with B <= 2 in " + ", ".join(FILES))
    return statistics.median(sd), sd


if __name__ == "__main__":
    v, sd = fit()
    if "--json" in sys.argv:
        print(json.dumps({"value_us": round(v, 3), "records": len(sd), "min_us": round(min(sd), 3), "max_us": round(max(sd), 3)}))
    else:
        print(f"unit_time_jitter: {v:.3f} us (median over {len(sd)} records of the first wave's standard deviation; "
              f"{min(sd):.2f}..{max(sd):.2f} us)")
