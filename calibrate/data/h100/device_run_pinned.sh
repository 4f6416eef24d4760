#!/usr/bin/env bash
# Issue 19, after round 10 (calibrate/data/h100/README.md "Run 28"): does cuBLASLt run the default plan's kernel with
# fewer CTAs when the descriptor's SM-count target is set AFTER the heuristic (probe_smshare --pinned-targets)? If so,
# the GEMM alone at several CTA counts, one kernel, per shape: what the model's one tile-rate line stands for. ONE device
# call on an H100 (or an H200: whether the library honours the target is a property of cuBLASLt; the times are the
# machine's); the tree travels as it is. usage: bash calibrate/data/h100/device_run_pinned.sh COMMIT
#   (1) probe_smshare --mode alone --sm-targets 0 --pinned-targets T for rounds 9-10's shapes and round 8's 1792x6144;
#   (2) ncu LaunchStats of the same (--mode gemm_once): kernel and grid of every pinned launch.
# Files: build.log, smi.txt, commands.txt, errs.log, alone.jsonl, ncu.csv.
set -u
COMMIT=$1
SHAPES=3072x3584x8192,2304x4352x8192,2944x3840x8192,2048x6656x8192,2432x3840x8192,2816x3840x8192,2304x5632x8192,2944x4096x8192,3072x3840x8192,1792x6144x8192
PINNED=128,124,120,116,108,100,92,84,76,66
ALSO_H200=1
. "$(dirname "$0")/device_common.sh"
C=$OUT/commands.txt; E=$OUT/errs.log
echo "# GPU: $GPU; $(date -u +%Y-%m-%dT%H:%M:%SZ); commit $COMMIT; pinned SM-count targets (run 28)" > $C
echo "probe_smshare --mode alone --shapes $SHAPES --sm-targets 0 --pinned-targets $PINNED --blocks 1 --commit $COMMIT" >> $C
$B --mode alone --shapes $SHAPES --sm-targets 0 --pinned-targets $PINNED --blocks 1 --commit $COMMIT > $OUT/alone.jsonl 2>> $E
echo "alone rc $? $(( $(date +%s) - t0 )) s $(grep -c . $OUT/alone.jsonl) lines"
echo "ncu --clock-control none --section LaunchStats --csv --page details probe_smshare --mode gemm_once --shapes $SHAPES --sm-targets 0 --pinned-targets $PINNED --commit $COMMIT" >> $C
timeout 240 ncu --clock-control none --section LaunchStats --csv --page details $B --mode gemm_once --shapes $SHAPES --sm-targets 0 --pinned-targets $PINNED --commit $COMMIT > $OUT/ncu.csv 2>> $E
echo "ncu rc $? $(( $(date +%s) - t0 )) s"
grep '"Grid Size"' $OUT/ncu.csv | grep -o '"([0-9, ]*)"' | sort | uniq -c | head -20
tail -3 $E
