#!/usr/bin/env bash
# Round 10 of issue 19 (calibrate/data/h100/README.md "Round 10"): the model of round 9, unchanged, on NEW shapes, at least 40 points,
# pre-registered. usage: bash calibrate/data/h100/device_run_r10.sh COMMIT probe | COMMIT measure SHAPES BLOCKS
# (device_run_rounds.sh with round 10: its candidates and B are ROUNDS[10] of smshare_rounds.py).
exec bash "$(dirname "$0")/device_run_rounds.sh" 10 "$@"
