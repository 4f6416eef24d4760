#!/usr/bin/env bash
# Round 7 of issue 19 (calibrate/data/h100/README.md "Round 7"): the engine's round-7 hand-out tested on NEW shapes,
# pre-registered. usage: bash calibrate/data/h100/device_run_r7.sh COMMIT probe | COMMIT measure SHAPES BLOCKS
# (device_run_rounds.sh with round 7: its candidates and B are ROUNDS[7] of smshare_rounds.py).
exec bash "$(dirname "$0")/device_run_rounds.sh" 7 "$@"
