# Seeds for fuzz_scenario (tests/fuzz/run_fuzzers.sh): a scenario file cut to its first K cases
# (awk -v K=4 -f trim_cases.awk FILE), every other line kept; a smaller input parses faster.
# Keep the first K items of the top-level `cases:` list (items start at "  - " or "- "), every other line.
BEGIN { incases = 0; n = 0 }
/^cases:/ { incases = 1; n = 0; print; next }
incases && /^[^ #-]/ { incases = 0 }
incases && /^(  )?- / { n++ }
{ if (!incases || n <= K) print }
