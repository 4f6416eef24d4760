#!/usr/bin/env bash
# Round 5 of issue 19 (probe_smshare), as run through the device tool: hw/kernels and this script were copied
# to .devwork-sm5/ of the session checkout and carried.
# usage: bash device_run_r5.sh COMMIT probe|measure
#   probe:   (1) --mode clusterres: the synthetic 2-CTA-cluster persistent kernel (grid x tiles 132x256,
#            128x128, 132x1024; static and dynamic tile hand-out) alone and beside both neighbours at
#            B = 2, 4, 6, 8, 12, 16, 20, 28, 32: CTAs resident at launch, which CTAs are late, the span;
#            no GEMM beside anything; (2) --mode alone: the round-5 shapes' GEMM default plans alone and both
#            neighbours alone at B = 6, 12, 20, 32; (3) ncu launch statistics of those GEMM kernels
#   rates:   the GEMM alone planned for few SMs (SM-count targets 124, 64, 32, 16, 8, 4) for the round-5
#            shapes and 2048x2048x8192: the per-SM tile rate with few CTAs running, which the tile-rate line
#            (fitted on 66..132) only extrapolates
#   measure: the round-5 shapes' GEMM alone again (drift), then the round-5 beside grid, after the
#            predictions' commit
set -u
COMMIT=$1; MODE=$2
SHAPES=1536x6144x8192,3072x3072x8192,4096x2048x8192,2560x5120x8192,1536x12288x4096
BLOCKS=6,12,20,32
export PATH=$PATH:/usr/local/cuda/bin
D=$(cd "$(dirname "$0")" && pwd)
t0=$(date +%s)
cmake -S $D/hw/kernels -B /tmp/bg -DFUSESIM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DFUSESIM_GIT_COMMIT=$COMMIT > $OUT/build.log 2>&1 &&
  cmake --build /tmp/bg -j16 --target probe_smshare >> $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
B=/tmp/bg/probe_smshare
[ -x $B ] || B=$(find /tmp/bg -name probe_smshare -type f | head -1)
nvidia-smi > $OUT/smi.txt 2>&1
if [ "$MODE" = probe ]; then
  C1="probe_smshare --mode clusterres --blocks 2,4,6,8,12,16,20,28,32 --res-configs 132x256,128x128,132x1024 --commit $COMMIT"
  echo "$C1" > $OUT/commands.txt
  $B --mode clusterres --blocks 2,4,6,8,12,16,20,28,32 --res-configs 132x256,128x128,132x1024 --commit $COMMIT > $OUT/clusterres_r5.jsonl 2> $OUT/clusterres.err
  echo "clusterres rc $? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/clusterres.err; grep -c . $OUT/clusterres_r5.jsonl
  echo "probe_smshare --mode alone --shapes $SHAPES --sm-targets 0 --blocks $BLOCKS --commit $COMMIT" >> $OUT/commands.txt
  $B --mode alone --shapes $SHAPES --sm-targets 0 --blocks $BLOCKS --commit $COMMIT > $OUT/alone_r5.jsonl 2> $OUT/alone.err
  echo "alone rc $? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/alone.err; grep -c . $OUT/alone_r5.jsonl
  echo "ncu --clock-control none --section LaunchStats --section Occupancy --csv --page details probe_smshare --mode gemm_once --shapes $SHAPES --sm-targets 0 --commit $COMMIT" >> $OUT/commands.txt
  timeout 240 ncu --clock-control none --section LaunchStats --section Occupancy --csv --page details $B --mode gemm_once --shapes $SHAPES --sm-targets 0 --commit $COMMIT > $OUT/ncu_r5.csv 2> $OUT/ncu.err
  echo "ncu rc $? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/ncu.err
  grep -o '"[^"]*nvjet[^"]*"' $OUT/ncu_r5.csv | sort | uniq -c
elif [ "$MODE" = rates ]; then
  S2=$SHAPES,2048x2048x8192
  echo "probe_smshare --mode alone --shapes $S2 --sm-targets 0,124,64,32,16,8,4 --kinds none --commit $COMMIT" > $OUT/commands.txt
  $B --mode alone --shapes $S2 --sm-targets 0,124,64,32,16,8,4 --kinds none --commit $COMMIT > $OUT/rates_r5.jsonl 2> $OUT/rates.err
  echo "rates rc $? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/rates.err; grep -c . $OUT/rates_r5.jsonl
else
  echo "probe_smshare --mode alone --shapes $SHAPES --sm-targets 0 --blocks $BLOCKS --commit $COMMIT" > $OUT/commands.txt
  $B --mode alone --shapes $SHAPES --sm-targets 0 --blocks $BLOCKS --commit $COMMIT > $OUT/alone_r5m.jsonl 2> $OUT/alone.err
  echo "alone rc $? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/alone.err
  echo "probe_smshare --mode beside --shapes $SHAPES --blocks $BLOCKS --cover 20 --commit $COMMIT" >> $OUT/commands.txt
  $B --mode beside --shapes $SHAPES --blocks $BLOCKS --cover 20 --commit $COMMIT > $OUT/beside_r5.jsonl 2> $OUT/beside.err
  echo "beside rc $? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/beside.err; grep -c . $OUT/beside_r5.jsonl
fi
