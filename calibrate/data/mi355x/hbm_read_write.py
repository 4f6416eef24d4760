#!/usr/bin/env python3
"""memory.fabric_bandwidth (HBM read rate) and memory.write_cost of hw/mi355x-8gpu.yaml, in closed form.

Source: seed 000 ("Where the time goes", bf16 and fp8/sdma columns; calibrate/data/mi355x/
04-phases-sglang.jsonl), two kernels measured as their own phases at M=16384, N=7168, ws=8:
  reduce      41.7 us: reads own + 7 received bf16 slices (8 x 28 MiB), writes 1 slice;
  dequantize  61.0 us: reads 7 landed e4m3 slices (7 x 14 MiB), writes 7 bf16 slices.
Each phase is kernel.launch_gap + kernel.fixed_cost (the file's values) + reads / R + writes x w / R,
the model's stream kernel (models/gemm_ar/gemm_ar.cpp, Node::stream_kernel). Two equations, two
unknowns (R, w); the quantize phase (reads 1 slice, writes 1/2 slice + row scales; 11.8 / 11.9 us)
is the check. Also prints how a 2% change of either phase (seed 000's run-to-run spread) moves them.
Run: /usr/bin/python3 calibrate/data/mi355x/hbm_read_write.py   (needs numpy)
"""
import numpy as np

LAUNCH_US = 3.57913 + 2.24537  # kernel.launch_gap + kernel.fixed_cost in hw/mi355x-8gpu.yaml
SLICE_MB = 16384 * 7168 * 2 / 8 / 1e6  # one bf16 slice, MB
ROWS = 16384 / 8


def solve(reduce_us=41.7, dequant_us=61.0):
    a = np.array([[8 * SLICE_MB, SLICE_MB], [3.5 * SLICE_MB, 7 * SLICE_MB]])  # [reads, writes] MB
    us_per_mb_read, us_per_mb_write = np.linalg.solve(a, [reduce_us - LAUNCH_US, dequant_us - LAUNCH_US])
    return 1.0 / us_per_mb_read, us_per_mb_write / us_per_mb_read  # TB/s (MB/us), write cost


if __name__ == "__main__":
    r, w = solve()
    quant = LAUNCH_US + (SLICE_MB + w * (SLICE_MB / 2 + 4 * ROWS / 1e6)) / r
    print(f"read rate {r * 1000:.0f} GB/s, write_cost {w:.3f} (writes at {r / w * 1000:.0f} GB/s)")
    print(f"check: quantize predicted {quant:.1f} us, measured 11.8 / 11.9 us")
    for d_red, d_deq in [(1.02, 1), (0.98, 1), (1, 1.02), (1, 0.98)]:
        r2, w2 = solve(41.7 * d_red, 61.0 * d_deq)
        print(f"reduce x{d_red}, dequantize x{d_deq}: read {r2 * 1000:.0f} GB/s, write_cost {w2:.3f}")
