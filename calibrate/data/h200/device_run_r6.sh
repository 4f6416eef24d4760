#!/usr/bin/env bash
# Round 6 of issue 19 (probe_smshare), as run through the device tool: hw/kernels, calibrate/live (which
# hw/kernels/CMakeLists.txt adds) and this script copied to .devwork-sm6/ of the session checkout and carried
# (`carry: [".devwork-sm6"]`, kind nvidia-h200; the command first checks that the GPU is an H200).
# usage: bash device_run_r6.sh COMMIT probe
#        bash device_run_r6.sh COMMIT measure SHAPES BLOCKS
#   probe:   (1) --mode alone: eight candidate shapes never measured before (their GEMM default plans alone) and
#            both neighbours alone at B values never used before (3..31 and 41..46: placement %smid, copy GB/s);
#            (2) ncu launch statistics of those GEMM kernels (grid, cluster, tile, registers, shared memory).
#            Round 6's shapes and B are chosen from these alone records (which kernel cuBLASLt picks sets the
#            tile count); nothing beside anything is run.
#   measure: the chosen shapes' GEMM alone again and both neighbours alone at the chosen B (drift), then the
#            round-6 beside grid, after the predictions' commit. SHAPES BLOCKS: `make_smshare_r6.py --grid`.
set -u
COMMIT=$1; MODE=$2
CAND=3072x4608x8192,3456x3840x8192,2304x3840x8192,2688x4608x8192,2880x3072x8192,4096x3072x8192,2048x2048x6144,1920x2304x8192
CANDB=3,5,7,9,11,13,14,15,17,19,21,23,25,27,29,30,31,41,42,43,44,45,46
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
  echo "probe_smshare --mode alone --shapes $CAND --sm-targets 0 --blocks $CANDB --commit $COMMIT" > $OUT/commands.txt
  $B --mode alone --shapes $CAND --sm-targets 0 --blocks $CANDB --commit $COMMIT > $OUT/alone_r6.jsonl 2> $OUT/alone.err
  echo "alone rc $? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/alone.err; grep -c . $OUT/alone_r6.jsonl
  echo "ncu --clock-control none --section LaunchStats --section Occupancy --csv --page details probe_smshare --mode gemm_once --shapes $CAND --sm-targets 0 --commit $COMMIT" >> $OUT/commands.txt
  timeout 300 ncu --clock-control none --section LaunchStats --section Occupancy --csv --page details $B --mode gemm_once --shapes $CAND --sm-targets 0 --commit $COMMIT > $OUT/ncu_r6.csv 2> $OUT/ncu.err
  echo "ncu rc $? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/ncu.err
  grep -o '"[^"]*nvjet[^"]*"' $OUT/ncu_r6.csv | sort | uniq -c
else
  SHAPES=$3; BLOCKS=$4
  echo "probe_smshare --mode alone --shapes $SHAPES --sm-targets 0 --blocks $BLOCKS --commit $COMMIT" > $OUT/commands.txt
  $B --mode alone --shapes $SHAPES --sm-targets 0 --blocks $BLOCKS --commit $COMMIT > $OUT/alone_r6m.jsonl 2> $OUT/alone.err
  echo "alone rc $? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/alone.err
  echo "probe_smshare --mode beside --shapes $SHAPES --blocks $BLOCKS --cover 20 --commit $COMMIT" >> $OUT/commands.txt
  $B --mode beside --shapes $SHAPES --blocks $BLOCKS --cover 20 --commit $COMMIT > $OUT/beside_r6.jsonl 2> $OUT/beside.err
  echo "beside rc $? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/beside.err; grep -c . $OUT/beside_r6.jsonl
fi
