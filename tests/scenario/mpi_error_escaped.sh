#!/usr/bin/env sh
# Issue 22: a case's error under `mpirun -np 2` is printed by rank 0 before MPI_Abort; the case id
# (input text) must reach the terminal escaped: no raw ESC byte, no line it could forge.
# Usage: mpi_error_escaped.sh MPIEXEC FUSESIM SCENARIO OUTDIR
set -u
out=$("$1" --oversubscribe --allow-run-as-root -np 2 "$2" sweep "$3" --out "$4/hostile.jsonl" --no-progress 2>&1)
rc=$?
[ "$rc" -ne 0 ] || { echo "expected a failing sweep, got rc 0"; exit 1; }
esc=$(printf '\033')
case "$out" in *"$esc"*) echo "raw ESC byte in the error output"; exit 1 ;; esac
printf '%s\n' "$out" | grep -q '^fusesim: forged' && { echo "a forged line reached the output"; exit 1; }
printf '%s\n' "$out" | grep -qF 'r\x1b[31mRED\nfusesim: forged' || { echo "escaped case id not found in: $out"; exit 1; }
echo escaped
