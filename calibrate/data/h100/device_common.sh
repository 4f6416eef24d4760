# Sourced by the issue-19 device scripts of calibrate/data/h100/ (device_run_r7b/c/d.sh, device_run_rounds.sh) after
# they set COMMIT, with the device tool's $OUT: refuses anything but an H100 (exit 3, naming the calling script; a
# script whose records hold for any Hopper part sets ALSO_H200=1 first to accept an H200 too),
# writes $OUT/smi.txt, builds probe_smshare from the tree's hw/kernels into /tmp/bg ($OUT/build.log; exit 1 with its
# tail on failure) and sets D (the tree), t0 (the start, s), GPU (its name) and B (the probe binary).
export PATH=$PATH:/usr/local/cuda/bin
D=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
t0=$(date +%s)
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | sed 's/ *$//')
echo "GPU: $GPU"
case "$GPU" in *H100*) ;; *H200*) [ "${ALSO_H200:-0}" = 1 ] || { echo "${0##*/}: not an H100 ('$GPU'): nothing run"; exit 3; } ;;
  *) echo "${0##*/}: not an H100 ('$GPU'): nothing run"; exit 3 ;; esac
nvidia-smi > $OUT/smi.txt 2>&1
cmake -S $D/hw/kernels -B /tmp/bg -DFUSESIM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DFUSESIM_GIT_COMMIT=$COMMIT > $OUT/build.log 2>&1 &&
  cmake --build /tmp/bg -j16 --target probe_smshare >> $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
B=/tmp/bg/probe_smshare
[ -x $B ] || B=$(find /tmp/bg -name probe_smshare -type f | head -1)
