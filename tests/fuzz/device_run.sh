#!/usr/bin/env bash
# Parallel libFuzzer run (issue 22), on the device machine (16 cores) or here:
#   bash tests/fuzz/device_run.sh COMMIT MAXTIME_S SPEC...   (OUT: folder for summary.txt and logs.tar.xz)
# SPEC = TARGET:PROCESSES:RUNS_EACH (all SPECs run at once). Binaries, libraries (glibc and its
# loader included) and corpora come from .devwork-fuzz/fuzz.tar.xz (tests/fuzz/pack_for_device.sh makes it
# here; the device machine has none of the Debian libraries). FZ_DIR: where it is unpacked (/tmp/fz).
set -u
commit=$1 maxt=$2; shift 2
F=${FZ_DIR:-/tmp/fz}; mkdir -p $F/logs
if [ ! -x $F/bin/fuzz_scenario ]; then
  (tar -xJf .devwork-fuzz/fuzz.tar.xz -C $F 2>/dev/null) || python3 -c "import tarfile;tarfile.open('.devwork-fuzz/fuzz.tar.xz').extractall('$F')"
fi
mkdir -p /work 2>/dev/null; [ -e /work/main ] || ln -s "$PWD" /work/main
S=$OUT/summary.txt
{ echo "date_utc: $(date -u +%FT%TZ)"; echo "commit: $commit"; echo "machine: $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(uname -sr)";
  echo "command: bash .devwork-fuzz/run.sh $commit $maxt $*"; } > $S
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1" UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" TMPDIR=/tmp
pids=()
for spec in "$@"; do
  IFS=: read -r t n r <<<"$spec"
  for i in $(seq 1 $n); do
    $F/lib/ld-linux-x86-64.so.2 --library-path $F/lib $F/bin/fuzz_$t $F/corpus/$t -dict=$F/fusesim.dict -runs=$r \
      -max_total_time=$maxt -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
      -artifact_prefix=$F/logs/$t-$i- > $F/logs/$t-$i.log 2>&1 &
    pids+=($!)
  done
done
for p in "${pids[@]}"; do wait $p; echo "pid $p exit $?" >> $F/logs/exits.txt; done
echo "end_utc: $(date -u +%FT%TZ)" >> $S
for spec in "$@"; do
  IFS=: read -r t n r <<<"$spec"
  tot=0
  for i in $(seq 1 $n); do
    u=$(grep -E '^stat::number_of_executed_units' $F/logs/$t-$i.log | awk '{print $2}' | tail -1)
    rss=$(grep -E '^stat::peak_rss_mb' $F/logs/$t-$i.log | awk '{print $2}' | tail -1)
    tm=$(grep -E '^Done [0-9]+ runs in' $F/logs/$t-$i.log | tail -1)
    echo "fuzz_$t process $i: executions ${u:-?} peak_rss_mb ${rss:-?} ${tm}" >> $S
    tot=$((tot + ${u:-0}))
    grep -E "ERROR|SUMMARY|Test unit written|timeout|out-of-memory|deadly" $F/logs/$t-$i.log | head -5 >> $S
  done
  echo "fuzz_$t TOTAL executions: $tot" >> $S
done
cat $F/logs/exits.txt >> $S
ls $F/logs | grep -v '\.log$\|exits.txt' | sed 's/^/artifact: /' >> $S
tar -cJf $OUT/logs.tar.xz -C $F logs
cat $S
