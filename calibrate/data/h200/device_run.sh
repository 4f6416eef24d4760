#!/usr/bin/env bash
# Device run script for issue 19 (probe_smshare), as used through the device tool: hw/kernels and calibrate/live
# were copied to .devwork/ of the session checkout and carried. usage: bash device_run.sh COMMIT alone|beside|posthoc|gpcmap
set -u
COMMIT=$1; MODE=$2
export PATH=$PATH:/usr/local/cuda/bin
D=$(cd "$(dirname "$0")" && pwd)
t0=$(date +%s)
cmake -S $D/hw/kernels -B /tmp/bg -DFUSESIM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DFUSESIM_GIT_COMMIT=$COMMIT > $OUT/build.log 2>&1 &&
  cmake --build /tmp/bg -j16 --target probe_smshare >> $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
B=/tmp/bg/probe_smshare
[ -x $B ] || B=$(find /tmp/bg -name probe_smshare -type f | head -1)
nvidia-smi > $OUT/smi.txt 2>&1
if [ "$MODE" = alone ]; then
  CMD="probe_smshare --mode alone --commit $COMMIT"
  echo "$CMD" > $OUT/commands.txt
  $B --mode alone --commit $COMMIT > $OUT/alone.jsonl 2> $OUT/alone.err; echo "alone rc $? $(( $(date +%s) - t0 )) s"
  echo "ncu --clock-control none --section LaunchStats --section Occupancy --csv --page details probe_smshare --mode gemm_once --commit $COMMIT" >> $OUT/commands.txt
  timeout 200 ncu --clock-control none --section LaunchStats --section Occupancy --csv --page details $B --mode gemm_once --commit $COMMIT > $OUT/ncu.csv 2> $OUT/ncu.err; echo "ncu rc $? $(( $(date +%s) - t0 )) s"
  tail -3 $OUT/alone.err; tail -3 $OUT/ncu.err
  grep -c . $OUT/alone.jsonl; head -c 600 $OUT/ncu.csv
elif [ "$MODE" = gpcmap ]; then
  echo "probe_smshare --mode gpcmap --commit $COMMIT" > $OUT/commands.txt
  $B --mode gpcmap --commit $COMMIT > $OUT/gpcmap.jsonl 2> $OUT/gpcmap.err; echo "gpcmap rc $?"; tail -3 $OUT/gpcmap.err; grep -c . $OUT/gpcmap.jsonl
elif [ "$MODE" = posthoc ]; then
  CMD="probe_smshare --mode beside --plan-for-free --blocks 4,16,33,66 --cover 20 --commit $COMMIT"
  echo "$CMD" > $OUT/commands.txt
  $B --mode beside --plan-for-free --blocks 4,16,33,66 --cover 20 --commit $COMMIT > $OUT/beside_planned.jsonl 2> $OUT/beside_planned.err; echo "posthoc rc $? $(( $(date +%s) - t0 )) s"
  tail -3 $OUT/beside_planned.err; grep -c . $OUT/beside_planned.jsonl
else
  CMD="probe_smshare --mode beside --cover 20 --commit $COMMIT"
  echo "$CMD" > $OUT/commands.txt
  $B --mode beside --cover 20 --commit $COMMIT > $OUT/beside.jsonl 2> $OUT/beside.err; echo "beside rc $? $(( $(date +%s) - t0 )) s"
  tail -3 $OUT/beside.err; grep -c . $OUT/beside.jsonl
fi
