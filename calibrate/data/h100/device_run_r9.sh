#!/usr/bin/env bash
# Round 9 of issue 19 (calibrate/data/h100/README.md "Round 9"): the engine after round 8 (per-kernel HBM coefficients) on NEW shapes,
# pre-registered. usage: bash calibrate/data/h100/device_run_r9.sh COMMIT probe | COMMIT measure SHAPES BLOCKS
# (device_run_rounds.sh with round 9: its candidates and B are ROUNDS[9] of smshare_rounds.py).
exec bash "$(dirname "$0")/device_run_rounds.sh" 9 "$@"
