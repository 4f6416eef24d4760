#!/usr/bin/env bash
# run_all_probes.sh: build fusesim's GPU probes (CUDA) and run them all, one JSONL file per probe.
#
# usage: hw/kernels/run_all_probes.sh OUT_DIR [COMMIT] [--smoke-gemm-ar]
#   OUT_DIR   where the results go (on the lent device machine: $OUT). Files:
#             hbm_copy.jsonl peer_copy.jsonl cu_remote.jsonl launch.jsonl gemm.jsonl
#             interference.jsonl run_log.txt (build log, nvidia-smi, stderr of each probe)
#             and, with --smoke-gemm-ar, gemm_ar_smoke.jsonl (a --check-only run: no timings).
#   COMMIT    git commit recorded in every line (default: git rev-parse HEAD, else "unknown").
# Environment: FUSESIM_GPU_BUILD (build dir, default <repo>/build-gpu), FUSESIM_PREBUILT (a folder
# of already built probes to fall back on when neither cmake nor a direct nvcc build works),
# PROBE_TIMEOUT_S (per-probe limit, default 150).
# The whole run takes about 1-2 minutes on an H200 pair after a ~1 minute build.
set -u
OUT_DIR=${1:?usage: run_all_probes.sh OUT_DIR [COMMIT] [--smoke-gemm-ar]}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
COMMIT=${2:-$(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)}
# The commit is pasted into a C string macro (-DFUSESIM_GIT_COMMIT) and every result line: only a
# safe character set is accepted (a hash, a tag, "unknown"), never quotes, spaces or newlines.
if ! [[ "$COMMIT" =~ ^[A-Za-z0-9._+-]{1,64}$ ]]; then
  echo "run_all_probes.sh: COMMIT must be 1-64 characters of [A-Za-z0-9._+-] (a git hash or tag); got $(printf %q "$COMMIT")" >&2
  exit 2
fi
SMOKE=0
for a in "$@"; do [ "$a" = "--smoke-gemm-ar" ] && SMOKE=1; done
BUILD=${FUSESIM_GPU_BUILD:-$REPO/build-gpu}
TMO=${PROBE_TIMEOUT_S:-150}
# Never use NVLink multicast on the lent machines (see the device docs).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PATH=$PATH:/usr/local/cuda/bin
mkdir -p "$OUT_DIR"
LOG=$OUT_DIR/run_log.txt
: > "$LOG"
say() { echo "[run_all_probes $(date -u +%H:%M:%S)] $*" | tee -a "$LOG"; }

say "repo $REPO commit $COMMIT build $BUILD"
# No GPU, no build: a machine without one would build the probes and leave empty result files.
if ! nvidia-smi -L 2>/dev/null | grep -q "^GPU "; then
  say "no GPU visible (nvidia-smi -L lists none): the probes run on a GPU node; nothing built or run"
  exit 1
fi
{
  date -u; uname -a; nproc
  echo "--- tools"; command -v nvcc cmake g++ python3; nvcc --version | tail -2; cmake --version | head -1
  echo "--- cublasLt"; ldconfig -p | grep -i cublaslt || echo "(not in ldconfig)"
  echo "--- nvidia-smi"; nvidia-smi
  echo "--- topology"; nvidia-smi topo -m
  echo "--- nvlink"; nvidia-smi nvlink -s -i 0
  echo "--- clocks"; nvidia-smi -q -d CLOCK | grep -A4 -E "^ +Clocks$|Max Clocks"
} >> "$LOG" 2>&1

# --- build --------------------------------------------------------------------------------------
BIN=""
t0=$(date +%s)
if cmake -S "$REPO/hw/kernels" -B "$BUILD" -DFUSESIM_GPU=cuda -DCMAKE_BUILD_TYPE=Release \
     -DFUSESIM_GIT_COMMIT="$COMMIT" >> "$LOG" 2>&1 &&
   cmake --build "$BUILD" -j "$(nproc)" >> "$LOG" 2>&1; then
  BIN=$BUILD
  say "cmake build ok ($(( $(date +%s) - t0 )) s)"
else
  say "cmake build failed; trying nvcc directly"
  NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  mkdir -p "$BUILD"
  K=$REPO/hw/kernels
  ok=1
  for p in probe_hbm_copy probe_peer_copy probe_cu_remote probe_launch probe_gemm probe_interference gemm_ar_live; do
    src=$K/$p.hip.cpp; [ "$p" = gemm_ar_live ] && src=$REPO/calibrate/live/gemm_ar_live.hip.cpp
    "$NVCC" -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -x cu -DFUSESIM_GPU_CUDA=1 \
      -DFUSESIM_GIT_COMMIT="\"$COMMIT\"" -I"$K" "$K/probe_common.hip.cpp" "$K/blaslt_gemm.hip.cpp" "$src" \
      -o "$BUILD/$p" -lcublasLt -ldl >> "$LOG" 2>&1 &
  done
  wait
  for p in probe_hbm_copy probe_peer_copy probe_cu_remote probe_launch probe_gemm probe_interference gemm_ar_live; do
    [ -x "$BUILD/$p" ] || ok=0
  done
  if [ $ok = 1 ]; then
    BIN=$BUILD; say "nvcc build ok"
  elif [ -n "${FUSESIM_PREBUILT:-}" ] && [ -x "${FUSESIM_PREBUILT}/probe_gemm" ]; then
    BIN=$FUSESIM_PREBUILT; say "nvcc build failed; using prebuilt probes in $BIN"
  else
    say "build failed; see $LOG"; tail -40 "$LOG"; exit 1
  fi
fi
if ! ldconfig -p | grep -q libcublasLt.so; then
  CUBLAS_LIB=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(os.path.dirname(nvidia.cublas.__file__), "lib"))' 2>/dev/null)
  [ -n "$CUBLAS_LIB" ] && export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$CUBLAS_LIB
fi

# --- run ----------------------------------------------------------------------------------------
# cuBLASLt errors (only) go to per-process files, appended to the log at the end.
export CUBLASLT_LOG_LEVEL=1 CUBLASLT_LOG_FILE="$OUT_DIR/cublaslt_%i.log"
FAILED=""
run_probe() {  # name file args...
  local name=$1 file=$2; shift 2
  local t=$(date +%s)
  echo "=== $name $*" >> "$LOG"
  timeout "$TMO" "$BIN/$name" --commit "$COMMIT" "$@" > "$OUT_DIR/$file" 2>> "$LOG"
  local rc=$?
  say "$name rc=$rc lines=$(wc -l < "$OUT_DIR/$file") $(( $(date +%s) - t )) s"
  [ $rc = 0 ] || FAILED="$FAILED $name"
}
run_probe probe_launch launch.jsonl
run_probe probe_hbm_copy hbm_copy.jsonl
run_probe probe_peer_copy peer_copy.jsonl
run_probe probe_cu_remote cu_remote.jsonl
run_probe probe_gemm gemm.jsonl
run_probe probe_interference interference.jsonl
if [ $SMOKE = 1 ]; then
  # Correctness only: --check-only prints no timings (the measurement run comes later).
  run_probe gemm_ar_live gemm_ar_smoke.jsonl --check-only --m 2048 --n 7168
  python3 - "$OUT_DIR/gemm_ar_smoke.jsonl" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    print(f"smoke gemm_ar_live {d['mode']:>10} m={d['m']} n={d['n']} rel_l2={d['rel_l2']} validated={d['validated']}")
EOF
fi
{ echo "--- clocks after"; nvidia-smi -q -d CLOCK | grep -A4 -E "^ +Clocks$"; } >> "$LOG" 2>&1
for f in "$OUT_DIR"/cublaslt_*.log; do
  [ -f "$f" ] || continue
  { echo "--- $(basename "$f")"; cat "$f"; } >> "$LOG"; rm -f "$f"
done
python3 "$REPO/hw/kernels/summarize_probes.py" "$OUT_DIR" || true
if [ -n "$FAILED" ]; then say "FAILED:$FAILED"; exit 1; fi
say "all probes done"
