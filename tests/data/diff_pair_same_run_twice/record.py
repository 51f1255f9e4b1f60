"""The identical tiny CNN inference recorded twice: a diff with no cause (only run-to-run noise).

Recorded with bench/record_known_causes.py (the recording facts live there), each file by a process of
its own, one after the other:

    PYTHONPATH=. taskset -c 1 python3 tests/data/diff_pair_same_run_twice/record.py
"""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORDER = HERE.parents[2] / "bench" / "record_known_causes.py"
FILES = {"run_1.json.gz": "layer_baseline", "run_2.json.gz": "layer_baseline"}

for file, case in FILES.items():
    subprocess.run([sys.executable, str(RECORDER), case, str(HERE / file)], check=True)
