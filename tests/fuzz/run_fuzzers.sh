#!/usr/bin/env bash
# Run every libFuzzer target of tests/fuzz for SECONDS each, one process at a time (a single
# in-process fuzzer: no -jobs/-workers forks, whose fuzz-N.log land in the CWD; nice -n 19):
# seed corpora from the repository's own files, the key dictionary tests/fuzz/fusesim.dict, and the
# limits the issue sets (a hang over 10 s or more than 2 GB is a finding). Prints each target's
# execution count. A finding is left in build-asan/findings/ and makes the script exit 1.
#   bash tests/fuzz/run_fuzzers.sh BUILD_DIR [SECONDS] [TARGET...]
# Longer run (tests/fuzz/README.md): FUSESIM_FUZZ_RUNS=N runs each target for N executions instead.
set -u
cd "$(dirname "$0")/../.."
B=${1:?usage: run_fuzzers.sh BUILD_DIR [SECONDS] [TARGET...]}
S=${2:-30}
shift $(( $# >= 2 ? 2 : 1 ))
targets=("$@")
((${#targets[@]})) || targets=(scenario hardware measurements trace)
mkdir -p "$B/findings" "$B/corpus"
# Seed corpora: the repository's own files of each kind (copied: libFuzzer adds to its corpus dirs).
seed() {  # target files...
  local dir=$B/corpus/$1; shift
  mkdir -p "$dir"
  for f in "$@"; do [ -f "$f" ] && cp -n "$f" "$dir/" 2>/dev/null; done
}
seed scenario tests/calibrate/fixtures/*.yaml
# Scenarios over 8 KB enter whole and also cut to their first 4 cases (tests/fuzz/trim_cases.awk:
# parsing is most of an input's cost, and mutants of the small copy are cheap) unless the cut file no
# longer runs (known misses naming cut cases, a fit across cases). The cut seeds alone reach 10195 of
# the whole seeds' 10279 edges, so the whole files stay in.
for f in scenarios/*.yaml; do
  dst=$B/corpus/scenario/$(basename "$f")
  [ -f "$dst" ] && continue
  if [ "$(wc -c < "$f")" -le 8192 ]; then cp "$f" "$dst"; continue; fi
  cut=$B/corpus/scenario-cut.yaml  # outside the corpus folder; its hardware path resolves from here
  awk -v K=4 -f tests/fuzz/trim_cases.awk "$f" > "$cut"
  cp "$f" "$dst"
  if ASAN_OPTIONS=detect_leaks=0 "$B/fusesim" run "$cut" >/dev/null 2>&1; then mv "$cut" "${dst%.yaml}.cut4.yaml"; fi
  rm -f "$cut"
done
seed hardware hw/*.yaml
# measurements: the first byte picks the parser (0 RESULT_JSON log, 1 JSON lines, 2 AFD document).
mkdir -p "$B/corpus/measurements"
i=0
for f in tests/calibrate/fixtures/*.log; do { printf '\x00'; cat "$f"; } > "$B/corpus/measurements/log$i"; i=$((i+1)); done
for f in tests/calibrate/fixtures/*.jsonl; do { printf '\x01'; cat "$f"; } > "$B/corpus/measurements/jsonl$i"; i=$((i+1)); done
for f in tests/calibrate/fixtures/seed004_small.json; do { printf '\x02'; cat "$f"; } > "$B/corpus/measurements/afd$i"; i=$((i+1)); done
# trace: the first byte picks analyze (even) or whatif (odd); small traces only.
mkdir -p "$B/corpus/trace"
i=0
for f in calibrate/trace/examples/*.json $(find tests/trace/fixtures -name '*.json' -size -64k 2>/dev/null | head -20); do
  { printf '\x00'; cat "$f"; } > "$B/corpus/trace/a$i"; { printf '\x01'; cat "$f"; } > "$B/corpus/trace/w$i"; i=$((i+1))
done
status=0
for t in "${targets[@]}"; do
  exe=$B/fuzz_$t
  [ -x "$exe" ] || { echo "run_fuzzers: $exe not built" >&2; status=1; continue; }
  limit=(-max_total_time="$S")
  [ -n "${FUSESIM_FUZZ_RUNS:-}" ] && limit=(-runs="$FUSESIM_FUZZ_RUNS")
  log=$B/findings/fuzz_$t.log
  ASAN_OPTIONS="detect_leaks=0:halt_on_error=1" UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    nice -n 19 "$exe" "$B/corpus/$t" -dict=tests/fuzz/fusesim.dict "${limit[@]}" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$B/findings/$t-" > "$log" 2>&1
  rc=$?
  runs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' | tail -1)
  echo "fuzz_$t: ${runs:-?} executions, exit $rc (log $log)"
  if [ $rc -ne 0 ]; then status=1; grep -E "ERROR|SUMMARY|Test unit written" "$log" | head -5; fi
done
exit $status
