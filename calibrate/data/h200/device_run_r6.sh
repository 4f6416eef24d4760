#!/usr/bin/env bash
# Round 6 of issue 19 (probe_smshare), as run through the device tool: hw/kernels, calibrate/live (which
# hw/kernels/CMakeLists.txt adds) and this script copied to .devwork-sm6/ of the session checkout and carried
# (`carry: [".devwork-sm6"]`; an H200 or an H100, see below).
# usage: bash device_run_r6.sh COMMIT probe
#        bash device_run_r6.sh COMMIT measure SHAPES BLOCKS "GPU NAME"
#   First step (both modes): the GPU's name (nvidia-smi --query-gpu=name). probe: an H200 gets the H200 probe below
#   (unchanged); an H100 gets the H100 probe (probe_h100 below: everything hw/h100-1gpu.yaml takes from alone
#   measurements, files named *_h100*); anything else is refused. measure: refused unless the name is exactly
#   "GPU NAME" (the probe's GPU, which ingest_r6.sh prints); the name goes to gpu.txt. The measure step itself is
#   the same on either GPU (the ingest gives its files the machine's record names).
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
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | sed 's/ *$//')
echo "GPU: $GPU"
case "$GPU" in
  *H200*) MACH=h200 ;;
  *H100*) MACH=h100 ;;
  *) echo "device_run_r6.sh: neither an H200 nor an H100 ('$GPU'): nothing run"; exit 3 ;;
esac
if [ "$MODE" != probe ]; then
  [ $# -ge 5 ] || { echo "device_run_r6.sh: measure needs the probe's GPU name as its 5th argument"; exit 2; }
  [ "$GPU" = "$5" ] || { echo "device_run_r6.sh: this GPU is '$GPU', the probe's was '$5': refused (predictions were made for the other machine)"; exit 3; }
fi
cmake -S $D/hw/kernels -B /tmp/bg -DFUSESIM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DFUSESIM_GIT_COMMIT=$COMMIT > $OUT/build.log 2>&1 &&
  cmake --build /tmp/bg -j16 --target probe_smshare >> $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
B=/tmp/bg/probe_smshare
[ -x $B ] || B=$(find /tmp/bg -name probe_smshare -type f | head -1)
nvidia-smi > $OUT/smi.txt 2>&1
if [ "$MODE" = probe ] && [ "$MACH" = h100 ]; then
  # The H100 probe: one call, every file named *_h100* (8 files in $OUT at most: build.log and the 7 below).
  # (a) the GPC of each SM (clusters of 2/4/8/16 CTAs); (b) the candidates' GEMM alone at the SM-count targets of
  # the tile-rate line (0 = default, 128..66) and of its cap (16, 8, 4), and both neighbours alone at B = 1..8
  # (the dispatcher's first SMs), round 6's candidate B and (added by the probe) 132, 264, 528 (the copy plateau);
  # (c) ncu launch statistics of the default plans (as on the H200) and of the SM-target plans (tile, grid).
  mv $OUT/smi.txt $OUT/smi_h100.txt
  TGT=0,128,124,116,100,99,84,66,16,8,4
  B100=1,2,4,6,8,$CANDB  # 3, 5, 7 are in CANDB (the probe does not drop repeated B)
  C=$OUT/commands_h100.txt; E=$OUT/errs_h100.log
  echo "# GPU: $GPU" > $C
  echo "probe_smshare --mode gpcmap --commit $COMMIT" >> $C
  $B --mode gpcmap --commit $COMMIT > $OUT/gpcmap_h100.jsonl 2>> $E
  echo "gpcmap rc $? $(( $(date +%s) - t0 )) s"; grep -c . $OUT/gpcmap_h100.jsonl
  echo "probe_smshare --mode alone --shapes $CAND --sm-targets $TGT --blocks $B100 --commit $COMMIT" >> $C
  $B --mode alone --shapes $CAND --sm-targets $TGT --blocks $B100 --commit $COMMIT > $OUT/alone_r6_h100.jsonl 2>> $E
  echo "alone rc $? $(( $(date +%s) - t0 )) s"; grep -c . $OUT/alone_r6_h100.jsonl; grep -c '"error"' $OUT/alone_r6_h100.jsonl
  echo "ncu --clock-control none --section LaunchStats --section Occupancy --csv --page details probe_smshare --mode gemm_once --shapes $CAND --sm-targets 0 --commit $COMMIT" >> $C
  timeout 120 ncu --clock-control none --section LaunchStats --section Occupancy --csv --page details $B --mode gemm_once --shapes $CAND --sm-targets 0 --commit $COMMIT > $OUT/ncu_r6_h100.csv 2>> $E
  echo "ncu rc $? $(( $(date +%s) - t0 )) s"
  echo "ncu --clock-control none --section LaunchStats --csv --page details probe_smshare --mode gemm_once --shapes $CAND --sm-targets ${TGT#0,} --commit $COMMIT" >> $C
  timeout 150 ncu --clock-control none --section LaunchStats --csv --page details $B --mode gemm_once --shapes $CAND --sm-targets ${TGT#0,} --commit $COMMIT > $OUT/ncu_rates_h100.csv 2>> $E
  echo "ncu rates rc $? $(( $(date +%s) - t0 )) s"
  tail -5 $E
  grep -o '"[^"]*nvjet[^"]*"' $OUT/ncu_r6_h100.csv | sort | uniq -c
  grep -o '"[^"]*nvjet[^"]*"' $OUT/ncu_rates_h100.csv | sort | uniq -c
elif [ "$MODE" = probe ]; then
  echo "probe_smshare --mode alone --shapes $CAND --sm-targets 0 --blocks $CANDB --commit $COMMIT" > $OUT/commands.txt
  $B --mode alone --shapes $CAND --sm-targets 0 --blocks $CANDB --commit $COMMIT > $OUT/alone_r6.jsonl 2> $OUT/alone.err
  echo "alone rc $? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/alone.err; grep -c . $OUT/alone_r6.jsonl
  echo "ncu --clock-control none --section LaunchStats --section Occupancy --csv --page details probe_smshare --mode gemm_once --shapes $CAND --sm-targets 0 --commit $COMMIT" >> $OUT/commands.txt
  timeout 300 ncu --clock-control none --section LaunchStats --section Occupancy --csv --page details $B --mode gemm_once --shapes $CAND --sm-targets 0 --commit $COMMIT > $OUT/ncu_r6.csv 2> $OUT/ncu.err
  echo "ncu rc $? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/ncu.err
  grep -o '"[^"]*nvjet[^"]*"' $OUT/ncu_r6.csv | sort | uniq -c
else
  SHAPES=$3; BLOCKS=$4
  echo "$GPU" > $OUT/gpu.txt
  echo "probe_smshare --mode alone --shapes $SHAPES --sm-targets 0 --blocks $BLOCKS --commit $COMMIT" > $OUT/commands.txt
  $B --mode alone --shapes $SHAPES --sm-targets 0 --blocks $BLOCKS --commit $COMMIT > $OUT/alone_r6m.jsonl 2> $OUT/alone.err
  echo "alone rc $? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/alone.err
  echo "probe_smshare --mode beside --shapes $SHAPES --blocks $BLOCKS --cover 20 --commit $COMMIT" >> $OUT/commands.txt
  $B --mode beside --shapes $SHAPES --blocks $BLOCKS --cover 20 --commit $COMMIT > $OUT/beside_r6.jsonl 2> $OUT/beside.err
  echo "beside rc $? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/beside.err; grep -c . $OUT/beside_r6.jsonl
fi
