#!/usr/bin/env python3
"""Round 9 of issue 19 (calibrate/data/h100/README.md "Round 9"): smshare_rounds.main(9), the one generator of rounds
7-10 (its docstring says what it writes and reads); round 9's runs, candidates, B and known-miss notes are ROUNDS[9]
there. Flags: none (the scenario), --predict, --grid, --measured. Run from anywhere."""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from smshare_rounds import main  # noqa: E402

main(9)
