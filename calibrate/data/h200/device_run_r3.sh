#!/usr/bin/env bash
# Round 3 of issue 19 (probe_smshare on NEW GEMM shapes), as run through the device tool: hw/kernels,
# calibrate/live and this script were copied to .devwork-sm3/ of the session checkout and carried.
# usage: bash device_run_r3.sh COMMIT alone|beside
#   alone:  the new shapes' GEMM default plans alone, both neighbours alone at the round-3 B values,
#           and ncu launch statistics of the GEMM kernels (grid, cluster, registers, shared memory)
#   beside: the round-3 grid, the GEMM beside each neighbour (after the predictions' commit)
set -u
COMMIT=$1; MODE=$2
SHAPES=6144x6144x4096,3072x8192x4096,2048x2048x8192,5120x3072x6144,1536x6144x8192
BLOCKS=4,10,24,36,52
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
  echo "probe_smshare --mode alone --shapes $SHAPES --sm-targets 0 --blocks $BLOCKS --commit $COMMIT" > $OUT/commands.txt
  $B --mode alone --shapes $SHAPES --sm-targets 0 --blocks $BLOCKS --commit $COMMIT > $OUT/alone_r3.jsonl 2> $OUT/alone.err
  echo "alone rc $? $(( $(date +%s) - t0 )) s"
  echo "ncu --clock-control none --section LaunchStats --section Occupancy --csv --page details probe_smshare --mode gemm_once --shapes $SHAPES --sm-targets 0 --commit $COMMIT" >> $OUT/commands.txt
  timeout 240 ncu --clock-control none --section LaunchStats --section Occupancy --csv --page details $B --mode gemm_once --shapes $SHAPES --sm-targets 0 --commit $COMMIT > $OUT/ncu_r3.csv 2> $OUT/ncu.err
  echo "ncu rc $? $(( $(date +%s) - t0 )) s"
  tail -3 $OUT/alone.err; tail -3 $OUT/ncu.err; grep -c . $OUT/alone_r3.jsonl
  grep -o '"Kernel Name","[^"]*"' $OUT/ncu_r3.csv | sort | uniq -c | head; grep -o '"[^"]*nvjet[^"]*"\|"[^"]*sm90[^"]*"' $OUT/ncu_r3.csv | sort -u | head
else
  echo "probe_smshare --mode beside --shapes $SHAPES --blocks $BLOCKS --cover 20 --commit $COMMIT" > $OUT/commands.txt
  $B --mode beside --shapes $SHAPES --blocks $BLOCKS --cover 20 --commit $COMMIT > $OUT/beside_r3.jsonl 2> $OUT/beside.err
  echo "beside rc $? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/beside.err; grep -c . $OUT/beside_r3.jsonl
fi
