#!/usr/bin/env bash
# Issue 19, after round 9 (calibrate/data/h100/README.md "Round 9", "Run 25"): a POST HOC diagnostic of round 9's one
# shape off by +7..+10% beside BOTH neighbours (3072x3584x8192, 168x128 1x2 kernel). ONE device call on an H100; the
# tree travels as it is (no carry). usage: bash calibrate/data/h100/device_run_r9diag.sh COMMIT
#   (1) probe_smshare --mode alone at SM-count targets 0,128,124,116,108,100,92,84 for round 9's four shapes and round
#       8's shape on the same kernel (1792x6144x8192): the GEMM's time with fewer CTAs running, alone (no neighbour);
#   (2) ncu LaunchStats of those plans (kernel, grid, cluster of each: which plans kept the default kernel);
#   (3) probe_smshare --mode tiletimes for 3072x3584x8192 and 2944x3840x8192 (same 528 scheduled units, similar
#       kernels; only the first missed) at B = 1, 6, 20, 44: when each 64x64 block of C is written.
# Refused on anything but an H100. Files: build.log, smi.txt, commands.txt, errs.log, alone.jsonl, ncu_rates.csv,
# tiles.jsonl.
set -u
COMMIT=$1
SHAPES=3072x3584x8192,2944x3840x8192,2304x4352x8192,2048x6656x8192,1792x6144x8192
TARGETS=0,128,124,116,108,100,92,84
TSHAPES=3072x3584x8192,2944x3840x8192
TBLOCKS=1,6,20,44
. "$(dirname "$0")/device_common.sh"
C=$OUT/commands.txt; E=$OUT/errs.log
echo "# GPU: $GPU; $(date -u +%Y-%m-%dT%H:%M:%SZ); commit $COMMIT; round 9 diagnostic (run 25)" > $C
echo "probe_smshare --mode alone --shapes $SHAPES --sm-targets $TARGETS --blocks 1 --commit $COMMIT" >> $C
$B --mode alone --shapes $SHAPES --sm-targets $TARGETS --blocks 1 --commit $COMMIT > $OUT/alone.jsonl 2>> $E
echo "alone rc $? $(( $(date +%s) - t0 )) s $(grep -c . $OUT/alone.jsonl) lines"
echo "ncu --clock-control none --section LaunchStats --csv --page details probe_smshare --mode gemm_once --shapes $SHAPES --sm-targets $TARGETS --commit $COMMIT" >> $C
timeout 200 ncu --clock-control none --section LaunchStats --csv --page details $B --mode gemm_once --shapes $SHAPES --sm-targets $TARGETS --commit $COMMIT > $OUT/ncu_rates.csv 2>> $E
echo "ncu rc $? $(( $(date +%s) - t0 )) s"
grep -o '"[^"]*nvjet[^"]*"' $OUT/ncu_rates.csv | sort | uniq -c
echo "probe_smshare --mode tiletimes --shapes $TSHAPES --blocks $TBLOCKS --commit $COMMIT" >> $C
$B --mode tiletimes --shapes $TSHAPES --blocks $TBLOCKS --commit $COMMIT > $OUT/tiles.jsonl 2>> $E
echo "tiletimes rc $? $(( $(date +%s) - t0 )) s $(grep -c . $OUT/tiles.jsonl) lines"
tail -3 $E
