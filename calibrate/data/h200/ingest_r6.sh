#!/usr/bin/env bash
# Round 6 of issue 19: files of a device_run_r6.sh call (the device tool's files_at folder) into this folder
# under their record names, then the next step.
# usage: bash ingest_r6.sh probe FILES_AT     run 12: alone records + ncu -> scenario + predictions (--predict);
#                                              then commit BOTH before the measuring call
#        bash ingest_r6.sh measure FILES_AT   run 13: drift alone records + beside grid -> scenario with measured
#                                              values (--measured), then fusesim check
set -eu
STEP=$1; F=$2
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$H/../../.." && pwd)
if [ "$STEP" = probe ]; then
  cp "$F/alone_r6.jsonl" "$H/probe_smshare_alone_r6.jsonl"
  cp "$F/ncu_r6.csv" "$H/ncu_launchstats_gemm_once_r6.csv"
  cp "$F/commands.txt" "$H/commands_run12.txt"
  cp "$F/smi.txt" "$H/nvidia_smi_run12.txt"
  cd "$ROOT"
  /usr/bin/python3 "$H/make_smshare_r6.py" --candidates
  /usr/bin/python3 "$H/make_smshare_r6.py" --predict
  echo "measure arguments: $(/usr/bin/python3 "$H/make_smshare_r6.py" --grid)"
else
  cp "$F/alone_r6m.jsonl" "$H/probe_smshare_alone_r6m.jsonl"
  cp "$F/beside_r6.jsonl" "$H/probe_smshare_beside_r6.jsonl"
  cp "$F/commands.txt" "$H/commands_run13.txt"
  cp "$F/smi.txt" "$H/nvidia_smi_run13.txt"
  cd "$ROOT"
  /usr/bin/python3 "$H/make_smshare_r6.py" --measured
  build/fusesim check scenarios/h200-sm-sharing-r6.yaml
fi
