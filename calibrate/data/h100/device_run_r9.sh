#!/usr/bin/env bash
# Round 9 of issue 19 (calibrate/data/h100/README.md "Round 9"): the engine after round 8 (per-kernel HBM coefficients) on NEW shapes,
# pre-registered. The tree travels as it is (no carry). Refused on anything but an H100 (hw/h100-1gpu.yaml).
# usage: bash calibrate/data/h100/device_run_r9.sh COMMIT probe
#        bash calibrate/data/h100/device_run_r9.sh COMMIT measure SHAPES BLOCKS
#   probe (run 23): the candidate shapes' GEMM alone (default plan), both neighbours alone at the round's B
#          (placement %smid, the copy's GB/s) and ncu launch statistics of the default plans. Nothing beside.
#   measure (run 24, after the predictions' commit): the chosen shapes' GEMM alone and the neighbours alone again
#          (drift), then the beside grid (both neighbours).
set -u
COMMIT=$1; MODE=$2
CAND=3072x3584x8192,2304x4352x8192,1664x6656x8192,2944x3840x8192,3840x2816x8192,1408x7680x8192,2432x4864x8192,3200x3328x8192,2048x6656x8192,3456x3072x8192
CANDB=6,20,32,44
export PATH=$PATH:/usr/local/cuda/bin
D=$(cd "$(dirname "$0")/../../.." && pwd)
t0=$(date +%s)
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | sed 's/ *$//')
echo "GPU: $GPU"
case "$GPU" in *H100*) ;; *) echo "device_run_r9.sh: not an H100 ('$GPU'): nothing run"; exit 3 ;; esac
nvidia-smi > $OUT/smi.txt 2>&1
cmake -S $D/hw/kernels -B /tmp/bg -DFUSESIM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DFUSESIM_GIT_COMMIT=$COMMIT > $OUT/build.log 2>&1 &&
  cmake --build /tmp/bg -j16 --target probe_smshare >> $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
B=/tmp/bg/probe_smshare
[ -x $B ] || B=$(find /tmp/bg -name probe_smshare -type f | head -1)
C=$OUT/commands.txt; E=$OUT/errs.log
echo "# GPU: $GPU; $(date -u +%Y-%m-%dT%H:%M:%SZ); commit $COMMIT; mode $MODE" > $C
if [ "$MODE" = probe ]; then
  echo "probe_smshare --mode alone --shapes $CAND --sm-targets 0 --blocks $CANDB --commit $COMMIT" >> $C
  $B --mode alone --shapes $CAND --sm-targets 0 --blocks $CANDB --commit $COMMIT > $OUT/alone.jsonl 2>> $E
  echo "alone rc $? $(( $(date +%s) - t0 )) s $(grep -c . $OUT/alone.jsonl) lines"
  echo "ncu --clock-control none --section LaunchStats --section Occupancy --csv --page details probe_smshare --mode gemm_once --shapes $CAND --sm-targets 0 --commit $COMMIT" >> $C
  timeout 200 ncu --clock-control none --section LaunchStats --section Occupancy --csv --page details $B --mode gemm_once --shapes $CAND --sm-targets 0 --commit $COMMIT > $OUT/ncu.csv 2>> $E
  echo "ncu rc $? $(( $(date +%s) - t0 )) s"
  grep -o '"[^"]*nvjet[^"]*"' $OUT/ncu.csv | sort | uniq -c
else
  SHAPES=$3; BLOCKS=$4
  echo "probe_smshare --mode alone --shapes $SHAPES --sm-targets 0 --blocks $BLOCKS --commit $COMMIT" >> $C
  $B --mode alone --shapes $SHAPES --sm-targets 0 --blocks $BLOCKS --commit $COMMIT > $OUT/alone_m.jsonl 2>> $E
  echo "alone rc $? $(( $(date +%s) - t0 )) s"
  echo "probe_smshare --mode beside --shapes $SHAPES --blocks $BLOCKS --cover 20 --commit $COMMIT" >> $C
  $B --mode beside --shapes $SHAPES --blocks $BLOCKS --cover 20 --commit $COMMIT > $OUT/beside.jsonl 2>> $E
  echo "beside rc $? $(( $(date +%s) - t0 )) s $(grep -c . $OUT/beside.jsonl) lines"
fi
tail -3 $E
