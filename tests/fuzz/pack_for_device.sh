#!/usr/bin/env bash
# Pack the libFuzzer targets of BUILD_DIR (built as tests/fuzz/RUNS.md says), every shared library they
# load (glibc and its loader included: the device machine's own differ), the seed corpora
# (BUILD_DIR/corpus, made by one short `run_fuzzers.sh BUILD_DIR` first) and the dictionary into
# .devwork-fuzz/fuzz.tar.xz, for tests/fuzz/device_run.sh on the device machine (carry .devwork-fuzz;
# .git/info/exclude must hold /.devwork-*/). ~43 MB.
#   bash tests/fuzz/pack_for_device.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:?usage: pack_for_device.sh BUILD_DIR}
[ -d "$B/corpus" ] || { echo "pack_for_device: $B/corpus missing: run bash tests/fuzz/run_fuzzers.sh $B 1 first" >&2; exit 1; }
P=$(mktemp -d); trap 'rm -rf "$P"' EXIT
mkdir -p "$P/bin" "$P/lib" .devwork-fuzz
for t in scenario hardware measurements trace; do cp "$B/fuzz_$t" "$P/bin/"; done
for b in "$P"/bin/fuzz_*; do ldd "$b" | awk '/=>/{print $3} /ld-linux/{print $1}'; done | sort -u |
  while read -r l; do cp -L "$l" "$P/lib/"; done
cp -r "$B/corpus" "$P/corpus"
cp tests/fuzz/fusesim.dict "$P/"
cp tests/fuzz/device_run.sh .devwork-fuzz/run.sh
tar -cf - -C "$P" . | xz -T0 -6 > .devwork-fuzz/fuzz.tar.xz.tmp && mv .devwork-fuzz/fuzz.tar.xz.tmp .devwork-fuzz/fuzz.tar.xz
ls -la .devwork-fuzz/fuzz.tar.xz
