#!/usr/bin/env bash
# Issue 19, run 19: the GPC of SMs 120..131 (ASSUMED in hw/data/h100-sm-map.jsonl), measured: probe_smshare --mode
# gpcrest holds SMs 0..119 (then all but one TPC of each GPC in turn) and launches clusters of 2, 4, 6, 8 CTAs on the rest (calibrate/data/h100/README.md,
# "Round 7"). The tree travels as it is. usage: bash calibrate/data/h100/device_run_r7d.sh COMMIT
set -u
COMMIT=$1
. "$(dirname "$0")/device_common.sh"
C=$OUT/commands.txt; E=$OUT/errs.log
echo "# GPU: $GPU; $(date -u +%Y-%m-%dT%H:%M:%SZ); commit $COMMIT" > $C
echo "probe_smshare --mode gpcrest --rest-from 120 --commit $COMMIT" >> $C
$B --mode gpcrest --rest-from 120 --commit $COMMIT > $OUT/gpcrest.jsonl 2>> $E
echo "gpcrest rc $? $(( $(date +%s) - t0 )) s $(grep -c . $OUT/gpcrest.jsonl) lines"
echo "probe_smshare --mode gpcrest --rest-from 120 --free-sms 0,2,4,6,8,10,12,14 --commit $COMMIT" >> $C
$B --mode gpcrest --rest-from 120 --free-sms 0,2,4,6,8,10,12,14 --commit $COMMIT > $OUT/gpcfree.jsonl 2>> $E
echo "gpcrest --free-sms rc $? $(( $(date +%s) - t0 )) s $(grep -c . $OUT/gpcfree.jsonl) lines"
echo "probe_smshare --mode gpcmap --commit $COMMIT" >> $C
$B --mode gpcmap --commit $COMMIT > $OUT/gpcmap.jsonl 2>> $E
echo "gpcmap rc $? $(( $(date +%s) - t0 )) s"
tail -3 $E
python3 - $OUT/gpcrest.jsonl $OUT/gpcfree.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]).readlines() + open(sys.argv[2]).readlines():
    d = json.loads(l)
    if d.get("measure") != "cluster_on_rest": continue
    c = d["cluster"]; sm = [int(x) for x in d["smids"]]; du = d["started_during_hold"]
    cl = [(sorted(sm[i:i + c]), int(du[i])) for i in range(0, len(sm), c)]
    if c == 2: continue
    print(f"free={d.get('free_tpc_sm')} c={c} k={d['clusters']} r={d['repeat']} held={d['held_blocks']} timeout={d['start_wait_timeout']} during={d['ctas_during_hold']}:", cl)
PY
