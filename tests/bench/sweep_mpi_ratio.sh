#!/usr/bin/env bash
# The same sweep by 1 process and by `mpirun -np NP` (default 2): wall times, their ratio, the CPU
# seconds each spent (user + sys over every process, mpirun's and the ranks'; on a machine shared
# with other jobs the wall ratio says little, the CPU seconds still compare), and that the two
# outputs are byte-identical. Usage, from the repository root after building:
#   bash tests/bench/sweep_mpi_ratio.sh [CASES [NP]]     # default 400 cases, 2 ranks
# CASES=100000 gives the 10^5-case sweep. The cases: fused-sdma, the wo_b shape (N=7168, K=2048,
# ws=8), M from 1 up and chunks 1..50 (cheap cases, 3-5 ms each).
set -euo pipefail
cases="${1:-400}"
np="${2:-2}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$(mktemp -d "${TMPDIR:-/tmp}/fusesim-ratio.XXXXXX")"
chunks=$(( cases < 50 ? cases : 50 ))
ms=$(( (cases + chunks - 1) / chunks ))
{
  echo "scenario: sweep-ratio-${cases}"
  echo "hardware: ${root}/hw/mi355x-8gpu.yaml"
  echo "model: gemm_ar"
  echo "defaults: {n: 7168, k: 2048, world_size: 8, quant: blockscale, mode: fused-sdma}"
  echo "cases:"
  echo "  - id: r"
  echo "    sweep: {m: [$(seq -s, 1 "$ms")], chunks: [$(seq -s, 1 "$chunks")]}"
} > "$dir/s.yaml"
# t FILE CMD...: the wall seconds; FILE gets the CPU seconds (user + sys of CMD and what it waited for).
t() { local f="$1" s; shift; s=$(date +%s.%N); /usr/bin/time -f '%U + %S' -o "$f" "$@" > /dev/null; echo "$(date +%s.%N) - $s" | bc; }
t1=$(t "$dir/cpu1" "$root/build/fusesim" sweep "$dir/s.yaml" --out "$dir/one.jsonl" --no-progress)
t2=$(t "$dir/cpu2" mpirun --oversubscribe --allow-run-as-root -np "$np" "$root/build/fusesim" sweep "$dir/s.yaml" --out "$dir/two.jsonl" --no-progress)
c1=$(tail -1 "$dir/cpu1" | bc)
c2=$(tail -1 "$dir/cpu2" | bc)
n=$(wc -l < "$dir/one.jsonl")
cmp -s "$dir/one.jsonl" "$dir/two.jsonl" && same=identical || same=DIFFERENT
printf 'cases %s  1 process %.2f s (%.1f cases/s, %.2f CPU-s)  mpirun -np %s %.2f s (%.1f cases/s, %.2f CPU-s)  speed-up %.2f  CPU ratio %.2f  outputs %s  (nproc %s, load %s)\n' \
  "$n" "$t1" "$(echo "$n / $t1" | bc -l)" "$c1" "$np" "$t2" "$(echo "$n / $t2" | bc -l)" "$c2" "$(echo "$t1 / $t2" | bc -l)" "$(echo "$c2 / $c1" | bc -l)" "$same" "$(nproc)" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$dir"
