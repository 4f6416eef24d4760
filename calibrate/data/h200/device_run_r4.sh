#!/usr/bin/env bash
# Round 4 of issue 19 (probe_smshare), as run through the device tool in ONE call: hw/kernels, calibrate/live
# and this script were copied to .devwork-sm4/ of the session checkout and carried.
# usage: bash device_run_r4.sh COMMIT
#   1. alone: round 3's five shapes' GEMM default plans alone and both neighbours alone at B = 2, 8, 16, 28
#      (for drift against run 6 and runs 1/5, whose alone records the predictions used)
#   2. beside: the round-4 grid (5 shapes x 2 neighbours x B = 2, 8, 16, 28), after the predictions' commit
set -u
COMMIT=$1
SHAPES=6144x6144x4096,3072x8192x4096,2048x2048x8192,5120x3072x6144,1536x6144x8192
BLOCKS=2,8,16,28
export PATH=$PATH:/usr/local/cuda/bin
D=$(cd "$(dirname "$0")" && pwd)
t0=$(date +%s)
cmake -S $D/hw/kernels -B /tmp/bg -DFUSESIM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DFUSESIM_GIT_COMMIT=$COMMIT > $OUT/build.log 2>&1 &&
  cmake --build /tmp/bg -j16 --target probe_smshare >> $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
B=/tmp/bg/probe_smshare
[ -x $B ] || B=$(find /tmp/bg -name probe_smshare -type f | head -1)
nvidia-smi > $OUT/smi.txt 2>&1
echo "probe_smshare --mode alone --shapes $SHAPES --sm-targets 0 --blocks $BLOCKS --commit $COMMIT" > $OUT/commands.txt
$B --mode alone --shapes $SHAPES --sm-targets 0 --blocks $BLOCKS --commit $COMMIT > $OUT/alone_r4.jsonl 2> $OUT/alone.err
echo "alone rc $? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/alone.err; grep -c . $OUT/alone_r4.jsonl
echo "probe_smshare --mode beside --shapes $SHAPES --blocks $BLOCKS --cover 20 --commit $COMMIT" >> $OUT/commands.txt
$B --mode beside --shapes $SHAPES --blocks $BLOCKS --cover 20 --commit $COMMIT > $OUT/beside_r4.jsonl 2> $OUT/beside.err
echo "beside rc $? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/beside.err; grep -c . $OUT/beside_r4.jsonl
