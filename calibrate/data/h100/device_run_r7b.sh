#!/usr/bin/env bash
# Issue 19, round-7 completion-time probe (run 15; calibrate/data/h100/README.md, "Completion-time probe"): ONE
# device call on an H100. The tree travels as it is (no carry).
# usage: bash calibrate/data/h100/device_run_r7b.sh COMMIT
#   (1) ncu LaunchStats of the default plans (kernel name -> tile and cluster shape, grid);
#   (2) probe_smshare --mode tiletimes: for each shape and B, when each 64x64 block of C is written, polled by the
#       B neighbour blocks (GEMM alone time first);
#   (3) probe_smshare --mode beside --kinds compute at the same shapes and B (the unpolled control: does polling
#       change the GEMM's time?).
# Refused on anything but an H100. Files: build.log, smi.txt, commands.txt, errs.log, ncu.csv, tiles.jsonl,
# beside.jsonl.
set -u
COMMIT=$1
SHAPES=1536x6144x8192,3072x4608x8192,3648x3840x8192,4096x3072x8192,2688x4608x8192,3072x3072x8192
BLOCKS=1,2,3,4,8,12,44
. "$(dirname "$0")/device_common.sh"
C=$OUT/commands.txt; E=$OUT/errs.log
echo "# GPU: $GPU; $(date -u +%Y-%m-%dT%H:%M:%SZ); commit $COMMIT" > $C
echo "ncu --clock-control none --section LaunchStats --csv --page details probe_smshare --mode gemm_once --shapes $SHAPES --sm-targets 0 --commit $COMMIT" >> $C
timeout 150 ncu --clock-control none --section LaunchStats --csv --page details $B --mode gemm_once --shapes $SHAPES --sm-targets 0 --commit $COMMIT > $OUT/ncu.csv 2>> $E
echo "ncu rc $? $(( $(date +%s) - t0 )) s"
grep -o '"[^"]*nvjet[^"]*"' $OUT/ncu.csv | sort | uniq -c
echo "probe_smshare --mode tiletimes --shapes $SHAPES --blocks $BLOCKS --commit $COMMIT" >> $C
$B --mode tiletimes --shapes $SHAPES --blocks $BLOCKS --commit $COMMIT > $OUT/tiles.jsonl 2>> $E
echo "tiletimes rc $? $(( $(date +%s) - t0 )) s $(grep -c . $OUT/tiles.jsonl) lines"
echo "probe_smshare --mode beside --shapes $SHAPES --kinds compute --blocks $BLOCKS --cover 20 --commit $COMMIT" >> $C
$B --mode beside --shapes $SHAPES --kinds compute --blocks $BLOCKS --cover 20 --commit $COMMIT > $OUT/beside.jsonl 2>> $E
echo "beside rc $? $(( $(date +%s) - t0 )) s $(grep -c . $OUT/beside.jsonl) lines"
tail -3 $E
