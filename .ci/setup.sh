#!/usr/bin/env bash
# fusesim set-up on a fresh Debian machine: install what is missing (Debian packages, needs root),
# configure and build into build/, then
#   bash .ci/setup.sh run    # run the main job: the default scenario (MI355X wo_b, TP8)
#   bash .ci/setup.sh test   # run every test (ctest) and `fusesim check` over every scenario
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-run}"
case "$what" in run|test) ;; *) echo "usage: bash .ci/setup.sh run|test" >&2; exit 2 ;; esac

pkgs=(cmake g++ make pkg-config libsystemc-dev libyaml-cpp-dev libeigen3-dev libgtest-dev libbenchmark-dev
      libcli11-dev nlohmann-json3-dev libfmt-dev zlib1g-dev gnuplot-nox openmpi-bin libopenmpi-dev)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  echo "fusesim: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then echo "fusesim: run as root to install Debian packages: ${missing[*]}" >&2; exit 1; fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# GPU kernels (hw/kernels, calibrate/live) build with nvcc or hipcc when present; nothing GPU-only runs here.
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFUSESIM_TRACE=ON >build-configure.log 2>&1 || { cat build-configure.log; exit 1; }
grep -E "GPU kernels backend" build-configure.log || true
cmake --build build -j"$(nproc)"

if [ "$what" = run ]; then
  ./build/fusesim run scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml
  # A trace of one case (a whole scenario's trace is large: use --only to pick cases)
  ./build/fusesim run scenarios/mi355x-dsv4-pro-wo_b-tp8.yaml --only headline/fused-sdma/m=16384 \
    --trace build/fused-sdma-m16384.trace.json --out build/fused-sdma-m16384.txt
  echo "trace of headline/fused-sdma/m=16384: build/fused-sdma-m16384.trace.json (open it in Perfetto: ui.perfetto.dev)"
  exit 0
fi

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "fusesim: a GPU is present, but the live probes are run through the device tool, not by the tests"
else
  echo "fusesim: no GPU on this machine: GPU kernels are compiled only (if nvcc/hipcc exist); live probes not run"
fi
(cd build && ctest --output-on-failure -j"$(nproc)")
./build/fusesim check scenarios/*.yaml
