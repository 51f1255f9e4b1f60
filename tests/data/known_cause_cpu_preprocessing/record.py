"""Inference whose step starts with numpy preprocessing inside record_function("preprocess") before
the tiny CNN's forward: CPU preprocessing is the cause of every step.

Recorded with tests/references/record_known_causes.py (the recording facts and this folder's files live there),
each file by a process of its own, one after the other:

    PYTHONPATH=. taskset -c 1 python3 tests/data/known_cause_cpu_preprocessing/record.py
"""

import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
runpy.run_path(str(HERE.parents[1] / "references" / "record_known_causes.py"))["record_folder"](HERE)
