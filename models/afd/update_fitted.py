#!/usr/bin/env python3
"""Write fusesim_afd_fit's output ("section.key value") into a hardware YAML in place: replaces the
value string of each fitted key and sets fitted_on. Usage: update_fitted.py HW_YAML FIT_OUTPUT DATE"""
import re, sys
hw, fit, date = sys.argv[1], sys.argv[2], sys.argv[3]
vals = dict(l.split() for l in open(fit) if re.match(r"^[a-z_]+\.[a-z_]+ \S+$", l.strip()))
lines, section = open(hw).read().splitlines(), None
for i, l in enumerate(lines):
    m = re.match(r"^([a-z_]+):\s*$", l)
    if m: section = m[1]; continue
    m = re.match(r"^  ([a-z_]+): \{value: \"[^\"]*\"(.*)$", l)
    if m and f"{section}.{m[1]}" in vals:
        rest = re.sub(r", fitted_on: [^,}]*", "", m[2])
        rest = rest[:-1] + f", fitted_on: {date}}}" if rest.endswith("}") else rest
        lines[i] = f"  {m[1]}: {{value: \"{vals[section + '.' + m[1]]}\"{rest}"
open(hw, "w").write("\n".join(lines) + "\n")
