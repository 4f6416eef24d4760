#!/usr/bin/env python3
"""Round 10 of issue 19 (calibrate/data/h100/README.md "Round 10"): writes scenarios/h100-sm-sharing-r10.yaml, the GEMM
beside a copy or compute kernel of B blocks on one H100 at shapes never measured before, and the pre-registered
predictions of models::gemm_beside with round 7's hand-out (hw::HandOut::static_two_then_counter, the late clusters'
work ids from hw/h100-1gpu.yaml's table late_cluster_work_ids). Inputs, all one-kernel-alone records of run 26
(probe_smshare_alone_r10_h100.jsonl, ncu_launchstats_gemm_once_r10_h100.csv): the GEMM's alone time and launch
statistics, the neighbours' attributes and the copy kernel's bandwidth alone at each B. No case carries a placement,
a slot count or a coefficient. The grid (fixed before run 26): every candidate whose default plan is persistent
(tiles > grid) and whose kernel has a row in hbm_queue_kappa_by_kernel, in CAND order, at most 6 (at least 5); B = 8, 16, 28, 36;
both neighbours.

  python3 calibrate/data/h100/make_smshare_r10.py            the scenario without measured values
  python3 calibrate/data/h100/make_smshare_r10.py --predict  the same, then build/fusesim run -> smshare_predictions_r10_h100.json
  python3 calibrate/data/h100/make_smshare_r10.py --grid     the arguments of device_run_r10.sh measure
  python3 calibrate/data/h100/make_smshare_r10.py --measured the cases with run 27's beside times and their sources
Run from anywhere; paths are relative to the repository root.
"""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from smshare_rounds import main  # noqa: E402  (the generator of rounds 7-10)

main(10)
