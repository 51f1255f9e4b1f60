"""The same tiny CNN inference twice: baseline, and slower_layer where features.3 (inside its
record_function range) sleeps before running: the diff's cause is that one layer.

Recorded with bench/record_known_causes.py (the recording facts live there), each file by a process of
its own, one after the other:

    PYTHONPATH=. taskset -c 1 python3 tests/data/diff_pair_slower_layer/record.py
"""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORDER = HERE.parents[2] / "bench" / "record_known_causes.py"
FILES = {"baseline.json.gz": "layer_baseline", "slower_layer.json.gz": "layer_slower"}

for file, case in FILES.items():
    subprocess.run([sys.executable, str(RECORDER), case, str(HERE / file)], check=True)
