#!/usr/bin/env bash
# Stand-in for `torchrun` in the `fusesim calibrate mori` tests: replays recorded RESULT_JSON lines
# (fixtures/recorded_results.jsonl, chosen by the benchmark flags it is given) with log noise, and
# injects failures chosen by the environment:
#   FAKE_CRASH_M=M      runs with -m M exit 1 after a traceback, no RESULT_JSON
#   FAKE_TIMEOUT_M=M    runs with -m M sleep 30 s (past the runner's timeout)
#   FAKE_INVALID_M=M    runs with -m M print their line with validated false
#   FAKE_NO_SDMA=1      every run moves nothing: rel_l2 ~ 1 and a (too fast) time
#   FAKE_NAN_M=M        runs with -m M print a bare NaN rel_l2 and validated false (a skipped check)
#   FAKE_PIDS=FILE      the timeout's sleeper writes its pid here (the tests check it was killed)
#   FAKE_CALLS=FILE     append one line per call (the -m, wire, pull blocks) for the tests to count
#   FAKE_RECORDED=FILE  the recorded lines to replay (default fixtures/recorded_results.jsonl): the old
#                       layouts' recordings (fixtures/recorded_old_layouts.jsonl) hold NaN literals
# bench_ar.py (the standalone all-reduce): --backend B -m M -n N [--dtype D], replayed from the lines
# keyed "bench=ar backend=B m=M". Called as `python -m torch.distributed.run ...` through
# fixtures/bin/python3 (the default launcher), it gets the same arguments.
# It checks what the real runs need: MORI_ENABLE_SDMA=1, MORI_SOCKET_IFNAME=lo, the benchmark script
# present in the working directory, --standalone and --nproc_per_node.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
recorded="${FAKE_RECORDED:-$here/fixtures/recorded_results.jsonl}"
[[ "${MORI_ENABLE_SDMA:-}" == 1 ]] || { echo "fake_torchrun: MORI_ENABLE_SDMA is not 1" >&2; exit 9; }
[[ "${MORI_SOCKET_IFNAME:-}" == lo ]] || { echo "fake_torchrun: MORI_SOCKET_IFNAME is not lo" >&2; exit 9; }
[[ "$1" == --standalone ]] || { echo "fake_torchrun: expected --standalone first" >&2; exit 9; }
[[ "$2" == --nproc_per_node=* ]] || { echo "fake_torchrun: expected --nproc_per_node=N" >&2; exit 9; }
ws="${2#--nproc_per_node=}"
script="$3"
[[ -f "$script" ]] || { echo "fake_torchrun: $script not found in $(pwd)" >&2; exit 9; }
shift 3
if [[ "$script" == */bench_ar.py ]]; then
  backend= m= n=
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --backend) backend="$2"; shift ;;
      -m) m="$2"; shift ;;
      -n) n="$2"; shift ;;
      --dtype|--iters) shift ;;
      *) echo "fake_torchrun: bench_ar.py: unknown flag $1" >&2; exit 2 ;;
    esac
    shift
  done
  [[ -n "${FAKE_CALLS:-}" ]] && echo "ar backend=$backend m=$m" >> "$FAKE_CALLS"
  echo "[W socket] MORI_SOCKET_IFNAME=lo, world size $ws"
  if [[ "${FAKE_CRASH_M:-}" == "$m" ]]; then
    echo "RuntimeError: hsaKmtCreateQueueExt failed (anvil.cpp:237)" >&2
    exit 1
  fi
  key="bench=ar backend=$backend m=$m"
  line="$(grep -F "\"key\": \"$key\"" "$recorded" | head -1)"
  [[ -n "$line" ]] || { echo "fake_torchrun: no recorded line for '$key'" >&2; exit 3; }
  json="$(printf '%s' "$line" | sed -e 's/"key": "[^"]*", //')"
  if [[ "${FAKE_NO_SDMA:-}" == 1 && "$backend" == sdma ]]; then
    json="$(printf '%s' "$json" | sed -e 's/"rel_l2": [0-9.e-]*/"rel_l2": 0.9921/')"
  fi
  echo "RESULT_JSON $json"
  exit 0
fi
mode= m= n= k= quant= dtype=bf16 transport=sdma fq=false
while [[ $# -gt 0 ]]; do
  case "$1" in
    --mode) mode="$2"; shift ;;
    -m) m="$2"; shift ;;
    -n) n="$2"; shift ;;
    -k) k="$2"; shift ;;
    --quant) quant="$2"; shift ;;
    --gather-dtype) dtype="$2"; shift ;;
    --gather-transport) transport="$2"; shift ;;
    --fuse-quantize) fq=true ;;
    --no-fuse-quantize) fq=false ;;
    --chunks|--gather-bands|--publish|--sdma-queues|--iters) shift ;;
    --fuse-reduce-push|--skip-validation) ;;
    *) echo "fake_torchrun: unknown flag $1" >&2; exit 2 ;;
  esac
  shift
done
pb="${MORI_GEMM_AR_PULL_BLOCKS:-64}"
[[ "$dtype" == fp8 && "$transport" == lsa ]] || pb=-
[[ -n "${FAKE_CALLS:-}" ]] && echo "m=$m mode=$mode wire=$dtype/$transport pb=$pb" >> "$FAKE_CALLS"
echo "[W socket] MORI_SOCKET_IFNAME=lo, world size $ws"
echo "rank 0: building kernels for $mode ($quant) M=$m N=$n K=$k"
if [[ "${FAKE_CRASH_M:-}" == "$m" ]]; then
  echo "Traceback (most recent call last):" >&2
  echo "RuntimeError: hsaKmtCreateQueueExt failed (anvil.cpp:237)" >&2
  exit 1
fi
if [[ "${FAKE_TIMEOUT_M:-}" == "$m" ]]; then
  echo "rank 0: waiting for peers..."
  sleep 30 &
  [[ -n "${FAKE_PIDS:-}" ]] && echo $! >> "$FAKE_PIDS"
  wait $!
  exit 0
fi
key="mode=$mode m=$m dtype=$dtype transport=$transport pb=$pb"
line=
# gemm-only lines may be keyed by route and shape too (the live loop's component sweep).
[[ "$mode" == gemm-only ]] && line="$(grep -F "\"key\": \"mode=gemm-only quant=$quant m=$m n=$n k=$k\"" "$recorded" | head -1)"
[[ -n "$line" ]] || line="$(grep -F "\"key\": \"$key\"" "$recorded" | head -1)"
if [[ -z "$line" ]]; then
  echo "fake_torchrun: no recorded line for '$key'" >&2
  exit 3
fi
json="$(printf '%s' "$line" | sed -e 's/"key": "[^"]*", //')"
if [[ "${FAKE_INVALID_M:-}" == "$m" ]]; then
  json="$(printf '%s' "$json" | sed -e 's/"validated": true/"validated": false/' -e 's/"rel_l2": [0-9.e-]*/"rel_l2": 0.0413/')"
fi
if [[ "${FAKE_NO_SDMA:-}" == 1 ]]; then
  json="$(printf '%s' "$json" | sed -e 's/"rel_l2": [0-9.e-]*/"rel_l2": 0.9921/')"
fi
if [[ "${FAKE_NAN_M:-}" == "$m" ]]; then
  json="$(printf '%s' "$json" | sed -e 's/"validated": true/"validated": false/' -e 's/"rel_l2": [0-9.e-]*/"rel_l2": NaN/')"
fi
echo "rank 0: median of 11 replays"
echo "RESULT_JSON $json"
echo "rank 0: done"
exit 0
