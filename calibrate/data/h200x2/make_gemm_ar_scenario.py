#!/usr/bin/env python3
"""Write the measured values of calibrate/live/gemm_ar_live into its scenarios, from runs whose value
of record is the per-point median of three runs (fixed before measuring, see the README beside this
script); each value cites the three files and lines, the date and the commit.

  make_gemm_ar_scenario.py            loop 3: gemm_ar_live_run{1,2,3}.jsonl -> scenarios/h200x2-gemm-ar.yaml
  make_gemm_ar_scenario.py heldout    gemm_ar_live_heldout_b{4,8}_run{1,2,3}.jsonl
                                      -> scenarios/h200x2-gemm-ar-heldout.yaml (4 bands: every mode; 8: overlapped)

Known misses go in KNOWN_MISS with the reason. Run from the repository root."""
import json
import statistics
import sys

D = 'calibrate/data/h200x2/'
KNOWN_MISS = {}  # (case id, n, m) -> reason


def load_runs(pattern, check=lambda r: True):
    """The three runs of `pattern` (with {i} = 1, 2, 3): (mode, n, m) -> (line number, record)."""
    runs = []
    for i in (1, 2, 3):
        rows = {}
        for line_no, line in enumerate(open(D + pattern.format(i=i)), 1):
            r = json.loads(line)
            assert r['validated'] and check(r), r
            rows[(r['mode'], r['n'], r['m'])] = (line_no, r)
        runs.append(rows)
    return runs


def cases(out, specs, ns, ms):
    """specs: (case id, params text, mode, runs, file glob, cite rel_l2) -> sweep cases with their measured values."""
    for cid, params, mode, runs, glob, with_rel_l2 in specs:
        out += [f'  - id: {cid}', f'    params: {params}',
                f"    sweep: {{n: [{', '.join(map(str, ns))}], m: [{', '.join(map(str, ms))}]}}", '    measured:']
        for n in ns:
            for m in ms:
                got = [run[(mode, n, m)] for run in runs]
                value = statistics.median(r['time_us'] for _, r in got)
                r0 = got[0][1]
                tail = f", rel_l2 {max(r['rel_l2'] for _, r in got):.2e}" if with_rel_l2 else ''
                src = (f'median of calibrate/data/h200x2/{glob} lines ' + '/'.join(str(ln) for ln, _ in got) + ' (' +
                       ', '.join(str(r['time_us']) for _, r in got) +
                       f" us; {r0['date']}, commit {r0['commit'][:12]}, validated true{tail})")
                miss = KNOWN_MISS.get((cid, n, m))
                extra = f', known_miss: "{miss}"' if miss else ''
                out.append(f'      - {{at: {{n: {n}, m: {m}}}, value_us: {value}, source: "{src}"{extra}}}')


if len(sys.argv) > 1 and sys.argv[1] == 'heldout':
    b4 = load_runs('gemm_ar_live_heldout_b4_run{i}.jsonl', lambda r: r['bands'] in (1, 4))
    b8 = load_runs('gemm_ar_live_heldout_b8_run{i}.jsonl', lambda r: r['bands'] in (1, 8))
    g4, g8 = 'gemm_ar_live_heldout_b4_run{1,2,3}.jsonl', 'gemm_ar_live_heldout_b8_run{1,2,3}.jsonl'
    out = ['# Held-out check of the H200 pair model (calibrate/live/gemm_ar_live): shapes and band counts never',
           '# measured by the live program before their predictions were committed (N 4096 / 6144, M 3072 ..',
           "# 24576, 4 and 8 bands). The GEMM's per-call times come from probe_gemm's M sweep at these N",
           '# (calibrate/data/h200x2/gemm.jsonl, the lines of commit 45acf74); every other parameter is the',
           '# probe fit of hw/h200-2gpu.yaml, unchanged. Predictions: calibrate/data/h200x2/predictions_heldout.json.',
           'scenario: h200x2-gemm-ar-heldout',
           'description: "held-out shapes of the bf16 GEMM + all-reduce on 2x H200: N 4096 / 6144, M 3072..24576, 4 and 8 bands"',
           'hardware: hw/h200-2gpu.yaml', 'model: gemm_ar_live', 'tolerance_pct: 12',
           'defaults: {k: 2048, world_size: 2, bands: 4}', 'cases:']
    cases(out, [('gemm-only', '{mode: gemm-only}', 'gemm-only', b4, g4, False),
                ('split', '{mode: split}', 'split', b4, g4, False),
                ('overlapped', '{mode: overlapped}', 'overlapped', b4, g4, False),
                ('overlapped-8-bands', '{mode: overlapped, bands: 8}', 'overlapped', b8, g8, False),
                ('lsa', '{mode: lsa}', 'lsa', b4, g4, False)], (4096, 6144), (3072, 6144, 12288, 24576))
    path = 'scenarios/h200x2-gemm-ar-heldout.yaml'
else:
    runs = load_runs('gemm_ar_live_run{i}.jsonl')
    pred = json.load(open(D + 'predictions.json'))
    out = ['# A real overlapped GEMM + all-reduce on the lent H200 pair (calibrate/live/gemm_ar_live): bf16 GEMM',
           '# [M, N] x K=2048 through cuBLASLt on each GPU, then the all-reduce of the partial outputs, in four',
           "# modes. The model's parameters come from the probes only (hw/h200-2gpu.yaml, fitted on",
           '# scenarios/h200x2-probes.yaml); its predictions were committed before the measurement',
           f"# (calibrate/data/h200x2/predictions.json, made from commit {pred['commit'][:7]}, committed in 0a3c2bb); the",
           '# measured values came after: per point the median of three runs (gemm_ar_live_run{1,2,3}.jsonl,',
           '# run log beside them). Generated by calibrate/data/h200x2/make_gemm_ar_scenario.py. Loops 1 and 2',
           '# are kept in calibrate/data/h200x2/loop1_16ac19e/ and loop2_9e14df1/.',
           'scenario: h200x2-gemm-ar',
           'description: "bf16 GEMM + all-reduce on 2x H200 (NVLink): gemm-only, split, overlapped (4 bands), LSA"',
           'hardware: hw/h200-2gpu.yaml', 'model: gemm_ar_live', 'tolerance_pct: 12',
           'defaults: {k: 2048, world_size: 2, bands: 4}', 'cases:']
    cases(out, [(mode, f'{{mode: {mode}}}', mode, runs, 'gemm_ar_live_run{1,2,3}.jsonl', True)
                for mode in ('gemm-only', 'split', 'overlapped', 'lsa')], (7168, 5120), (2048, 4096, 8192, 16384, 32768))
    path = 'scenarios/h200x2-gemm-ar.yaml'
open(path, 'w').write('\n'.join(out) + '\n')
