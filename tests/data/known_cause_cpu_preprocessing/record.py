"""Inference whose step starts with numpy preprocessing inside record_function("preprocess") before
the tiny CNN's forward: CPU preprocessing is the cause of every step.

Recorded with bench/record_known_causes.py (the recording facts live there), each file by a process of
its own, one after the other:

    PYTHONPATH=. taskset -c 1 python3 tests/data/known_cause_cpu_preprocessing/record.py
"""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORDER = HERE.parents[2] / "bench" / "record_known_causes.py"
FILES = {"cpu_preprocessing.json.gz": "cpu_preprocessing"}

for file, case in FILES.items():
    subprocess.run([sys.executable, str(RECORDER), case, str(HERE / file)], check=True)
