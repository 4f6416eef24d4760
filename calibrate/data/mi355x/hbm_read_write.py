#!/usr/bin/env python3
"""kernel.launch_gap (the launch sum), memory.fabric_bandwidth (HBM read rate) and memory.write_cost
of hw/mi355x-8gpu.yaml, by linear least squares on seed 000's three kernel phases.

Source: seed 000 ("Where the time goes"; calibrate/data/mi355x/04-phases-sglang.jsonl), three kernels
measured as their own phases at M=16384, N=7168, ws=8 (S = one bf16 slice, 28 MiB):
  reduce      41.7 / 42.5 / 43.1 us (bf16, fp8/sdma, fp8/lsa columns: the same kernel):
              reads own + 7 received bf16 slices (8 S), writes 1 slice (S);
  dequantize  61.0 us: reads 7 landed e4m3 slices (3.5 S), writes 7 bf16 slices (7 S);
  quantize    11.8 / 11.9 us: reads 1 slice (S), writes 1/2 slice + one fp32 scale per row.
Each phase is L + reads / R + writes x w / R, the model's stream kernel (models/gemm_ar/gemm_ar.cpp,
Node::stream_kernel), where L = kernel.launch_gap + kernel.fixed_cost: every MI355X path charges the
two as one sum (Node::launch, collective.cpp Call::launch), so the file carries the sum as
kernel.launch_gap and kernel.fixed_cost 0. Linear in (L, 1/R, w/R): 6 phases, 3 unknowns, 3 kernels
of different read/write mixes (the system is of full rank); the sigmas come from the residuals of
the repeats (3 degrees of freedom) and the covariance, propagated to R and w to first order.
Run: /usr/bin/python3 calibrate/data/mi355x/hbm_read_write.py   (needs numpy)
"""
import numpy as np

SLICE_MB = 16384 * 7168 * 2 / 8 / 1e6  # one bf16 slice, MB
ROWS = 16384 / 8
QUANT_WRITES = SLICE_MB / 2 + 4 * ROWS / 1e6
# (name, MB read, MB written, measured us)
PHASES = [
    ("reduce bf16", 8 * SLICE_MB, SLICE_MB, 41.7),
    ("reduce fp8/sdma", 8 * SLICE_MB, SLICE_MB, 42.5),
    ("reduce fp8/lsa", 8 * SLICE_MB, SLICE_MB, 43.1),
    ("dequantize fp8/sdma", 3.5 * SLICE_MB, 7 * SLICE_MB, 61.0),
    ("quantize fp8/sdma", SLICE_MB, QUANT_WRITES, 11.8),
    ("quantize fp8/lsa", SLICE_MB, QUANT_WRITES, 11.9),
]


def solve(phases=PHASES):
    """Returns (L us, R MB/us, w, sigma L, sigma R, sigma w, predicted us per phase)."""
    a = np.array([[1.0, rd, wr] for _, rd, wr, _ in phases])
    y = np.array([t for *_, t in phases])
    x, *_ = np.linalg.lstsq(a, y, rcond=None)
    dof = len(y) - 3
    s2 = float(((a @ x - y) ** 2).sum()) / dof
    cov = s2 * np.linalg.inv(a.T @ a)
    launch, inv_r, w_over_r = x
    jac = np.array([[0, -1 / inv_r**2, 0], [0, -w_over_r / inv_r**2, 1 / inv_r]])  # d(R, w) / d(L, 1/R, w/R)
    c2 = jac @ cov @ jac.T
    return launch, 1 / inv_r, w_over_r / inv_r, np.sqrt(cov[0, 0]), np.sqrt(c2[0, 0]), np.sqrt(c2[1, 1]), a @ x


if __name__ == "__main__":
    L, r, w, sl, sr, sw, pred = solve()
    print(f"launch sum {L:.3f} +- {sl:.3f} us, read rate {r * 1000:.0f} +- {sr * 1000:.0f} GB/s, "
          f"write_cost {w:.4f} +- {sw:.4f} (writes at {r / w * 1000:.0f} GB/s)")
    for (name, _, _, t), p in zip(PHASES, pred):
        print(f"  {name:20s} measured {t:5.1f} us, fitted {p:5.2f} us ({100 * (p - t) / t:+.1f}%)")
    # seed 000's run-to-run spread is ~2%: how much one kernel's 2% moves the three values
    for i, (name, rd, wr, t) in enumerate(PHASES):
        if name.startswith("reduce f") or name.startswith("quantize fp8/l"):
            continue
        for d in (1.02, 0.98):
            moved = list(PHASES)
            moved[i] = (name, rd, wr, t * d)
            if name.startswith("reduce"):  # the reduce's three repeats move together
                moved = [(n, a_, b_, t_ * d) if n.startswith("reduce") else (n, a_, b_, t_) for n, a_, b_, t_ in PHASES]
            if name.startswith("quantize"):
                moved = [(n, a_, b_, t_ * d) if n.startswith("quantize") else (n, a_, b_, t_) for n, a_, b_, t_ in PHASES]
            L2, r2, w2, *_ = solve(moved)
            print(f"  {name.split()[0]} x{d}: launch {L2:.2f} us, read {r2 * 1000:.0f} GB/s, write_cost {w2:.3f}")
