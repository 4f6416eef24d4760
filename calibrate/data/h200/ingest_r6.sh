#!/usr/bin/env bash
# Round 6 of issue 19: files of a device_run_r6.sh call (the device tool's files_at folder) into their record
# names, then the next step. MACHINE: h200 (the default; calibrate/data/h200/, as before) or h100
# (calibrate/data/h100/, record names *_h100*, hw/h100-1gpu.yaml, scenarios/h100-sm-sharing-r6.yaml).
# usage: bash ingest_r6.sh probe FILES_AT [MACHINE]    run 12: alone records + ncu (+ on h100: gpcmap, the SM-target
#                                                       plans' ncu -> make_h100_hw.py -> hw/h100-1gpu.yaml and
#                                                       hw/data/h100-sm-map.jsonl) -> scenario + predictions
#                                                       (--predict); then commit ALL before the measuring call
#        bash ingest_r6.sh measure FILES_AT [MACHINE]  run 13: drift alone records + beside grid -> scenario with
#                                                       measured values (--measured), then fusesim check
set -eu
STEP=$1; F=$2; M=${3:-h200}
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$H/../../.." && pwd)
case "$M" in h200) D=$H; S=""; GPU=H200 ;; h100) D=$ROOT/calibrate/data/h100; S=_h100; GPU=H100 ;;
  *) echo "ingest_r6.sh: MACHINE is h200 or h100 (got $M)"; exit 2 ;; esac
mkdir -p "$D"
if [ "$STEP" = probe ]; then
  if [ "$M" = h200 ]; then
    cp "$F/alone_r6.jsonl" "$H/probe_smshare_alone_r6.jsonl"
    cp "$F/ncu_r6.csv" "$H/ncu_launchstats_gemm_once_r6.csv"
    cp "$F/commands.txt" "$H/commands_run12.txt"
    cp "$F/smi.txt" "$H/nvidia_smi_run12.txt"
  else
    grep -q "H100" "$F/smi_h100.txt" || { echo "ingest_r6.sh: $F/smi_h100.txt names no H100"; exit 3; }
    cp "$F/gpcmap_h100.jsonl" "$D/probe_smshare_gpcmap_h100.jsonl"
    cp "$F/alone_r6_h100.jsonl" "$D/probe_smshare_alone_r6_h100.jsonl"
    cp "$F/ncu_r6_h100.csv" "$D/ncu_launchstats_gemm_once_r6_h100.csv"
    cp "$F/ncu_rates_h100.csv" "$D/ncu_launchstats_rates_h100.csv"
    cp "$F/commands_h100.txt" "$D/commands_run12_h100.txt"
    cp "$F/smi_h100.txt" "$D/nvidia_smi_run12_h100.txt"
    cd "$ROOT"
    /usr/bin/python3 "$D/make_h100_hw.py"
    build/fusesim params hw/h100-1gpu.yaml
  fi
  cd "$ROOT"
  /usr/bin/python3 "$H/make_smshare_r6.py" --machine $M --candidates
  /usr/bin/python3 "$H/make_smshare_r6.py" --machine $M --predict
  NAME=$(/usr/bin/python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["machine"]["gpu_name"])' "$D/probe_smshare_alone_r6$S.jsonl")
  echo "measure arguments: $(/usr/bin/python3 "$H/make_smshare_r6.py" --machine $M --grid) \"$NAME\""
else
  G=$(cat "$F/gpu.txt" 2>/dev/null || true)
  case "$G" in *"$GPU"*) ;; *) echo "ingest_r6.sh: the measure call ran on '$G', not an $GPU: not ingested"; exit 3 ;; esac
  cp "$F/alone_r6m.jsonl" "$D/probe_smshare_alone_r6m$S.jsonl"
  cp "$F/beside_r6.jsonl" "$D/probe_smshare_beside_r6$S.jsonl"
  cp "$F/commands.txt" "$D/commands_run13$S.txt"
  cp "$F/smi.txt" "$D/nvidia_smi_run13$S.txt"
  cd "$ROOT"
  /usr/bin/python3 "$H/make_smshare_r6.py" --machine $M --measured
  build/fusesim check scenarios/$M-sm-sharing-r6.yaml
fi
