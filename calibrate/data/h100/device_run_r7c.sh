#!/usr/bin/env bash
# Issue 19, round-7 completion-time probe (run 16; calibrate/data/h100/README.md, "Completion-time probe"): ONE
# device call on an H100. The tree travels as it is (no carry).
# usage: bash calibrate/data/h100/device_run_r7c.sh COMMIT
# Run 16: the late clusters' work ids at every B from 1 to 48 for the two kernels (one shape each), and three
# larger shapes at B = 2, 4, 8 (is the hand-out static at 4..8 units per cluster?). One launch recorded per point.
#   (1) ncu LaunchStats of the default plans (kernel name -> tile and cluster shape, grid);
#   (2) probe_smshare --mode tiletimes: for each shape and B, when each 64x64 block of C is written, polled by the
#       B neighbour blocks (GEMM alone time first);
#   (3) the same for three larger shapes at B = 2, 4, 8 (two launches each).
# Refused on anything but an H100. Files: build.log, smi.txt, commands.txt, errs.log, ncu.csv, tiles.jsonl,
# tiles_big.jsonl (no unpolled control in this run).
set -u
COMMIT=$1
SHAPES=1536x6144x8192,4096x3072x8192
BIG=6144x6144x4096,4096x4096x4096,8192x8192x4096
BLOCKS=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,18,20,22,24,26,28,30,32,36,40,44,48
. "$(dirname "$0")/device_common.sh"
C=$OUT/commands.txt; E=$OUT/errs.log
echo "# GPU: $GPU; $(date -u +%Y-%m-%dT%H:%M:%SZ); commit $COMMIT" > $C
echo "ncu --clock-control none --section LaunchStats --csv --page details probe_smshare --mode gemm_once --shapes $SHAPES,$BIG --sm-targets 0 --commit $COMMIT" >> $C
timeout 150 ncu --clock-control none --section LaunchStats --csv --page details $B --mode gemm_once --shapes $SHAPES,$BIG --sm-targets 0 --commit $COMMIT > $OUT/ncu.csv 2>> $E
echo "ncu rc $? $(( $(date +%s) - t0 )) s"
grep -o '"[^"]*nvjet[^"]*"' $OUT/ncu.csv | sort | uniq -c
echo "probe_smshare --mode tiletimes --shapes $SHAPES --blocks $BLOCKS --poll-repeats 1 --commit $COMMIT" >> $C
$B --mode tiletimes --shapes $SHAPES --blocks $BLOCKS --poll-repeats 1 --commit $COMMIT > $OUT/tiles.jsonl 2>> $E
echo "probe_smshare --mode tiletimes --shapes $BIG --blocks 2,4,8 --poll-repeats 2 --commit $COMMIT" >> $C
$B --mode tiletimes --shapes $BIG --blocks 2,4,8 --poll-repeats 2 --commit $COMMIT > $OUT/tiles_big.jsonl 2>> $E
echo "tiletimes rc $? $(( $(date +%s) - t0 )) s $(grep -c . $OUT/tiles.jsonl) lines"
tail -3 $E
