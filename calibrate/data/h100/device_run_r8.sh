#!/usr/bin/env bash
# Round 8 of issue 19 (calibrate/data/h100/README.md "Round 8"): the engine after round 7 (hand-out, measured GPCs of SMs 120..123, fluid progress) on NEW shapes,
# pre-registered. usage: bash calibrate/data/h100/device_run_r8.sh COMMIT probe | COMMIT measure SHAPES BLOCKS
# (device_run_rounds.sh with round 8: its candidates and B are ROUNDS[8] of smshare_rounds.py).
exec bash "$(dirname "$0")/device_run_rounds.sh" 8 "$@"
