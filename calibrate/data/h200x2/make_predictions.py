#!/usr/bin/env python3
"""Write calibrate/data/h200x2/predictions.json: fusesim's predictions for every point of
scenarios/h200x2-gemm-ar.yaml (gemm_ar_live on the H200 pair), with date, command and the commit
they were made from. Commit the file before measuring. Run from the repository root after building
build/fusesim. Usage: make_predictions.py LOOP_NAME [SCENARIO [OUT_JSON]]"""
import datetime, json, subprocess, sys

loop = sys.argv[1] if len(sys.argv) > 1 else 'loop'
scenario = sys.argv[2] if len(sys.argv) > 2 else 'scenarios/h200x2-gemm-ar.yaml'
out_path = sys.argv[3] if len(sys.argv) > 3 else 'calibrate/data/h200x2/predictions.json'
cmd = ['build/fusesim', 'run', scenario, '--format', 'json']
d = json.loads(subprocess.check_output(cmd))
commit = subprocess.check_output(['git', 'rev-parse', 'HEAD']).decode().strip()
dirty = subprocess.run(['git', 'diff', '--quiet', 'HEAD', '--', 'models/gemm_ar_live.cpp', 'models/gemm_ar_live.hpp',
                        'hw/h200-2gpu.yaml', 'sim', scenario,
                        'calibrate/data/h200x2/gemm.jsonl']).returncode != 0
out = {'what': f'fusesim predictions for calibrate/live/gemm_ar_live on the H200 pair ({loop}), made before the measurement',
       'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ'),
       'machine': 'prediction (no GPU): fusesim on the development machine',
       'command': ' '.join(cmd), 'commit': commit + (' (with uncommitted changes)' if dirty else ''),
       'hardware_file': 'hw/h200-2gpu.yaml (fitted on scenarios/h200x2-probes.yaml = calibrate/data/h200x2 probe sweeps only)',
       'cases': [{'id': c['id'], 'params': c['params'], 'predicted_us': c['predicted_us'], 'phases': c.get('phases', [])}
                 for c in d['cases']]}
json.dump(out, open(out_path, 'w'), indent=1)
print(f"{len(out['cases'])} predictions written, commit {out['commit']}")
