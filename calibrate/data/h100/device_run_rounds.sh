#!/usr/bin/env bash
# Rounds 7-10 of issue 19 (calibrate/data/h100/README.md "Round 7" .. "Round 10"), pre-registered, as run
# through the device tool: the tree travels as it is (no carry). Refused on anything but an H100 (hw/h100-1gpu.yaml).
# The round's candidate shapes and B come from smshare_rounds.py (ROUNDS), the table make_smshare_rN.py uses.
# usage: bash calibrate/data/h100/device_run_rounds.sh ROUND COMMIT probe
#        bash calibrate/data/h100/device_run_rounds.sh ROUND COMMIT measure SHAPES BLOCKS
#   (device_run_r7.sh .. device_run_r10.sh: the same with ROUND given)
#   probe (runs 17, 21, 23, 26): the candidate shapes' GEMM alone (default plan), both neighbours alone at the round's B
#          (placement %smid, the copy's GB/s) and ncu launch statistics of the default plans. Nothing beside.
#   measure (runs 18, 22, 24, 27, after the predictions' commit): the chosen shapes' GEMM alone and the neighbours alone
#          again (drift), then the beside grid (both neighbours).
set -u
ROUND=$1; COMMIT=$2; MODE=$3
H=$(cd "$(dirname "$0")" && pwd)
read -r CAND CANDB < <(python3 "$H/smshare_rounds.py" candidates "$ROUND") || exit 2
. "$(dirname "$0")/device_common.sh"
C=$OUT/commands.txt; E=$OUT/errs.log
echo "# GPU: $GPU; $(date -u +%Y-%m-%dT%H:%M:%SZ); commit $COMMIT; mode $MODE; round $ROUND" > $C
if [ "$MODE" = probe ]; then
  echo "probe_smshare --mode alone --shapes $CAND --sm-targets 0 --blocks $CANDB --commit $COMMIT" >> $C
  $B --mode alone --shapes $CAND --sm-targets 0 --blocks $CANDB --commit $COMMIT > $OUT/alone.jsonl 2>> $E
  echo "alone rc $? $(( $(date +%s) - t0 )) s $(grep -c . $OUT/alone.jsonl) lines"
  echo "ncu --clock-control none --section LaunchStats --section Occupancy --csv --page details probe_smshare --mode gemm_once --shapes $CAND --sm-targets 0 --commit $COMMIT" >> $C
  timeout 200 ncu --clock-control none --section LaunchStats --section Occupancy --csv --page details $B --mode gemm_once --shapes $CAND --sm-targets 0 --commit $COMMIT > $OUT/ncu.csv 2>> $E
  echo "ncu rc $? $(( $(date +%s) - t0 )) s"
  grep -o '"[^"]*nvjet[^"]*"' $OUT/ncu.csv | sort | uniq -c
else
  SHAPES=$4; BLOCKS=$5
  echo "probe_smshare --mode alone --shapes $SHAPES --sm-targets 0 --blocks $BLOCKS --commit $COMMIT" >> $C
  $B --mode alone --shapes $SHAPES --sm-targets 0 --blocks $BLOCKS --commit $COMMIT > $OUT/alone_m.jsonl 2>> $E
  echo "alone rc $? $(( $(date +%s) - t0 )) s"
  echo "probe_smshare --mode beside --shapes $SHAPES --blocks $BLOCKS --cover 20 --commit $COMMIT" >> $C
  $B --mode beside --shapes $SHAPES --blocks $BLOCKS --cover 20 --commit $COMMIT > $OUT/beside.jsonl 2>> $E
  echo "beside rc $? $(( $(date +%s) - t0 )) s $(grep -c . $OUT/beside.jsonl) lines"
fi
tail -3 $E
