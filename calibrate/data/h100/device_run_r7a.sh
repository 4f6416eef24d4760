#!/usr/bin/env bash
# Issue 19, round-6 analysis probe (run 14; calibrate/data/h100/README.md, "Round 6 analysis"): ONE device call on an
# H100 that tells apart the candidate drain rules fixed in analyse_r6_drains.py (HYPOTHESES) before it runs. Carried
# as .devwork-sm7/ (hw/kernels, calibrate/live and this script; `carry: [".devwork-sm7"]`).
# usage: bash device_run_r7a.sh COMMIT
#   (1) probe_smshare --mode alone: the probe shapes' GEMM alone (default plan) and the compute neighbour alone at the
#       probe B (its %smid placement); (2) ncu LaunchStats of the default plans (kernel name -> tile and cluster
#       shape, grid, registers, shared memory); (3) probe_smshare --mode beside, compute neighbour only (no HBM
#       stretch to model), every shape x every B. Refused on anything but an H100 (this session never asks for an
#       H200; the hardware file is hw/h100-1gpu.yaml). Files (<= 8): build.log, smi.txt, commands.txt, errs.log,
#       alone.jsonl, ncu.csv, beside.jsonl.
set -u
COMMIT=$1
# A-config shapes (256 tiles on the H200: 1536x6144x8192, 3072x3072x8192, 4096x2048x8192), the two 384-tile
# round-6 shapes (whole-wave at B = 3 and 44), the 378-tile round-6 shape (2688x4608x8192, a padded tile grid if
# the cluster rounds it up), 3648x3840x8192 (380 tiles), and two tile grids with an odd dimension along the cluster
# (4224x3072x8192: 33 tile rows of 128; 3264x4416x8192: 23 tile columns of 192).
SHAPES=1536x6144x8192,3072x3072x8192,4096x2048x8192,3072x4608x8192,4096x3072x8192,2688x4608x8192,3648x3840x8192,4224x3072x8192,3264x4416x8192
BLOCKS=2,3,4,8,12,16,28,44
export PATH=$PATH:/usr/local/cuda/bin
D=$(cd "$(dirname "$0")" && pwd)
t0=$(date +%s)
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | sed 's/ *$//')
echo "GPU: $GPU"
case "$GPU" in *H100*) ;; *) echo "device_run_r7a.sh: not an H100 ('$GPU'): nothing run"; exit 3 ;; esac
echo "$GPU" > $OUT/smi.txt; nvidia-smi >> $OUT/smi.txt 2>&1
cmake -S $D/hw/kernels -B /tmp/bg -DFUSESIM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DFUSESIM_GIT_COMMIT=$COMMIT > $OUT/build.log 2>&1 &&
  cmake --build /tmp/bg -j16 --target probe_smshare >> $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
B=/tmp/bg/probe_smshare
[ -x $B ] || B=$(find /tmp/bg -name probe_smshare -type f | head -1)
C=$OUT/commands.txt; E=$OUT/errs.log
echo "# GPU: $GPU; $(date -u +%Y-%m-%dT%H:%M:%SZ); commit $COMMIT" > $C
echo "probe_smshare --mode alone --shapes $SHAPES --sm-targets 0 --kinds compute --blocks $BLOCKS --commit $COMMIT" >> $C
$B --mode alone --shapes $SHAPES --sm-targets 0 --kinds compute --blocks $BLOCKS --commit $COMMIT > $OUT/alone.jsonl 2>> $E
echo "alone rc $? $(( $(date +%s) - t0 )) s $(grep -c . $OUT/alone.jsonl) lines"
echo "ncu --clock-control none --section LaunchStats --csv --page details probe_smshare --mode gemm_once --shapes $SHAPES --sm-targets 0 --commit $COMMIT" >> $C
timeout 150 ncu --clock-control none --section LaunchStats --csv --page details $B --mode gemm_once --shapes $SHAPES --sm-targets 0 --commit $COMMIT > $OUT/ncu.csv 2>> $E
echo "ncu rc $? $(( $(date +%s) - t0 )) s"
grep -o '"[^"]*nvjet[^"]*"' $OUT/ncu.csv | sort | uniq -c
echo "probe_smshare --mode beside --shapes $SHAPES --kinds compute --blocks $BLOCKS --cover 20 --commit $COMMIT" >> $C
$B --mode beside --shapes $SHAPES --kinds compute --blocks $BLOCKS --cover 20 --commit $COMMIT > $OUT/beside.jsonl 2>> $E
echo "beside rc $? $(( $(date +%s) - t0 )) s $(grep -c . $OUT/beside.jsonl) lines"
tail -3 $E
