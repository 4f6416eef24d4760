#!/usr/bin/env python3
"""Write the measured values into scenarios/h200x2-gemm-ar-heldout.yaml: per point the median of the
three runs gemm_ar_live_heldout_b{4,8}_run{1,2,3}.jsonl (4 bands: every mode; 8 bands: overlapped),
each citing its files, lines, date and commit. The predictions were committed before
(predictions_heldout.json). Run from the repository root."""
import json
import statistics

D = 'calibrate/data/h200x2/'
NS, MS = (4096, 6144), (3072, 6144, 12288, 24576)


def load(bands):
    runs = []
    for i in (1, 2, 3):
        rows = {}
        name = f'gemm_ar_live_heldout_b{bands}_run{i}.jsonl'
        for line_no, line in enumerate(open(D + name), 1):
            r = json.loads(line)
            assert r['validated'] and r['bands'] in (1, bands), r
            rows[(r['mode'], r['n'], r['m'])] = (line_no, r)
        runs.append(rows)
    return runs


runs = {4: load(4), 8: load(8)}
head = [l for l in open('scenarios/h200x2-gemm-ar-heldout.yaml').read().split('\n') if l.startswith('#')]
out = head + ['scenario: h200x2-gemm-ar-heldout',
              'description: "held-out shapes of the bf16 GEMM + all-reduce on 2x H200: N 4096 / 6144, M 3072..24576, 4 and 8 bands"',
              'hardware: hw/h200-2gpu.yaml', 'model: gemm_ar_live', 'tolerance_pct: 12',
              'defaults: {k: 2048, world_size: 2, bands: 4}', 'cases:']
for cid, mode, bands in (('gemm-only', 'gemm-only', 4), ('split', 'split', 4), ('overlapped', 'overlapped', 4),
                         ('overlapped-8-bands', 'overlapped', 8), ('lsa', 'lsa', 4)):
    params = f'{{mode: {mode}}}' if bands == 4 else f'{{mode: {mode}, bands: {bands}}}'
    out += [f'  - id: {cid}', f'    params: {params}', '    sweep: {n: [4096, 6144], m: [3072, 6144, 12288, 24576]}',
            '    measured:']
    for n in NS:
        for m in MS:
            got = [run[(mode, n, m)] for run in runs[bands]]
            value = statistics.median(r['time_us'] for _, r in got)
            r0 = got[0][1]
            src = (f'median of calibrate/data/h200x2/gemm_ar_live_heldout_b{bands}_run{{1,2,3}}.jsonl lines ' +
                   '/'.join(str(ln) for ln, _ in got) + ' (' + ', '.join(str(r['time_us']) for _, r in got) +
                   f" us; {r0['date']}, commit {r0['commit'][:12]}, validated true)")
            out.append(f'      - {{at: {{n: {n}, m: {m}}}, value_us: {value}, source: "{src}"}}')
open('scenarios/h200x2-gemm-ar-heldout.yaml', 'w').write('\n'.join(out) + '\n')
