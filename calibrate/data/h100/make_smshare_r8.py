#!/usr/bin/env python3
"""Round 8 of issue 19 (calibrate/data/h100/README.md "Round 8"): smshare_rounds.main(8), the one generator of rounds
7-10 (its docstring says what it writes and reads); round 8's runs, candidates, B and known-miss notes are ROUNDS[8]
there. Flags: none (the scenario), --predict, --grid, --measured. Run from anywhere."""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from smshare_rounds import main  # noqa: E402

main(8)
