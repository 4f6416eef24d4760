#!/usr/bin/env bash
# The MI355X live-node loop (issue 18 item 4), as the H200 pair's loop has it: components measured,
# fitted, the fused paths predicted and recorded, and only then measured and checked.
#
#   calibrate/mi355x_live_loop.sh OUT_DIR
#
#   1. components: `fusesim calibrate mori` runs the GEMM alone per route and shape
#      ($SWEEPS/components-gemm.yaml, bench_gemm_ar.py --mode gemm-only) and the all-reduce alone per
#      backend and M ($SWEEPS/components-allreduce.yaml, bench_ar.py), each after the SDMA build check;
#   2. fit: `fusesim calibrate fit` fits the GEMM keys ($GEMM_KEYS) on the gemm-only records, then the
#      collective keys ($COLL_KEYS) on the all-reduce records, into OUT_DIR/hw-components.yaml (the
#      SDMA check records, table sdma-check, are held out: predicted, never fitted; the gemm sweep's
#      check is a fused-sdma run, a composite);
#   3. predictions: the composite sweep's runs as a scenario on that file (`calibrate mori
#      --plan-scenario`), predicted by `fusesim run` into OUT_DIR/predictions.json, which records the
#      fusesim commit, the date and the hardware file's sha256; with LOOP_COMMIT=1 the predictions and
#      the fitted file are committed (git) before anything composite runs;
#   4. composite: `fusesim calibrate mori` measures $SWEEPS/composite.yaml;
#   5. check: the same scenario with the measured values (`--plan-scenario --measured`), then
#      `fusesim check` (the exit status is check's).
#
# Environment: MORI_DIR (required: a mori checkout built with BUILD_CCO_SDMA=ON), FUSESIM
# (build/fusesim), NPROC (8), HW (hw/mi355x-8gpu.yaml, the starting file), SWEEPS
# (calibrate/data/mi355x/loop), GEMM_KEYS (gemm.blockscale_latency,gemm.blockscale_wave_per_kblock), COLL_KEYS
# (sdma.queue_peak,links.read_efficiency,lsa.stage_overhead), TOLERANCE_PCT (10), MORI_ARGS (more
# `calibrate mori` options, one word each, e.g. "--python /opt/venv/bin/python3 --pause-s 10").
# A sweep with failed runs (exit 1: recorded, never fitted) continues; a refused SDMA check (3) stops.
set -euo pipefail
out="${1:?usage: calibrate/mi355x_live_loop.sh OUT_DIR}"
: "${MORI_DIR:?MORI_DIR: a mori checkout built with BUILD_CCO_SDMA=ON}"
FUSESIM="${FUSESIM:-build/fusesim}"
NPROC="${NPROC:-8}"
HW="${HW:-hw/mi355x-8gpu.yaml}"
SWEEPS="${SWEEPS:-calibrate/data/mi355x/loop}"
GEMM_KEYS="${GEMM_KEYS:-gemm.blockscale_latency,gemm.blockscale_wave_per_kblock}"
COLL_KEYS="${COLL_KEYS:-sdma.queue_peak,links.read_efficiency,lsa.stage_overhead}"
TOLERANCE_PCT="${TOLERANCE_PCT:-10}"
read -r -a mori_args <<< "${MORI_ARGS:-}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
commit="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
step() { printf '\n== %s (%s)\n' "$*" "$(date -u +%FT%TZ)" >&2; }
sweep() {  # sweep FILE OUT: calibrate mori, tolerating recorded failures (exit 1)
  local rc=0
  "$FUSESIM" calibrate mori --mori-dir "$MORI_DIR" --nproc "$NPROC" --sweep "$1" --out "$2" --commit "$commit" "${mori_args[@]}" || rc=$?
  if [[ $rc -eq 1 ]]; then echo "note: $1: some runs failed (recorded in $2 with their reason, never fitted)" >&2
  elif [[ $rc -ne 0 ]]; then echo "stopped: calibrate mori --sweep $1 exited $rc" >&2; exit "$rc"; fi
}

step "1/5 components: the GEMM alone per route and shape, the all-reduce alone per backend and M"
sweep "$SWEEPS/components-gemm.yaml" "$out/components-gemm.jsonl"
sweep "$SWEEPS/components-allreduce.yaml" "$out/components-allreduce.jsonl"

step "2/5 fit the components' keys"
"$FUSESIM" calibrate fit --hw "$HW" --measurements "$out/components-gemm.jsonl" --free "$GEMM_KEYS" \
  --holdout table=sdma-check --out "$out/hw-gemm.yaml" --report "$out/fit-gemm.json"
"$FUSESIM" calibrate fit --hw "$out/hw-gemm.yaml" --measurements "$out/components-allreduce.jsonl" --free "$COLL_KEYS" \
  --holdout table=sdma-check --out "$out/hw-components.yaml" --report "$out/fit-allreduce.json"

step "3/5 predict the composite sweep from the components (recorded before it is measured)"
"$FUSESIM" calibrate mori --sweep "$SWEEPS/composite.yaml" --nproc "$NPROC" --commit "$commit" --hw "$out/hw-components.yaml" \
  --plan-scenario "$out/composite-predicted.yaml" --scenario-name composite-predicted
date="$(date -u +%FT%TZ)"
sha="$(sha256sum "$out/hw-components.yaml" | cut -d' ' -f1)"
{
  printf '{"commit": "%s", "date": "%s", "hardware": "%s", "hardware_sha256": "%s", "sweep": "%s", "predictions": ' \
    "$commit" "$date" "$out/hw-components.yaml" "$sha" "$SWEEPS/composite.yaml"
  "$FUSESIM" run "$out/composite-predicted.yaml" --format json
  printf '}\n'
} > "$out/predictions.json.tmp"
mv "$out/predictions.json.tmp" "$out/predictions.json"
echo "predictions: $out/predictions.json (fusesim $commit, $date)" >&2
if [[ "${LOOP_COMMIT:-0}" == 1 ]]; then
  git add -f "$out/predictions.json" "$out/composite-predicted.yaml" "$out/hw-components.yaml" \
    "$out/components-gemm.jsonl" "$out/components-allreduce.jsonl"
  git commit -m "MI355X loop: components measured and fitted, composite predictions recorded before measuring ($out)"
fi

step "4/5 measure the composite sweep"
sweep "$SWEEPS/composite.yaml" "$out/composite.jsonl"

step "5/5 compare: fusesim check"
"$FUSESIM" calibrate mori --sweep "$SWEEPS/composite.yaml" --nproc "$NPROC" --commit "$commit" --hw "$out/hw-components.yaml" \
  --plan-scenario "$out/composite-measured.yaml" --measured "$out/composite.jsonl" --scenario-name composite-measured \
  --tolerance-pct "$TOLERANCE_PCT"
"$FUSESIM" check "$out/composite-measured.yaml"
