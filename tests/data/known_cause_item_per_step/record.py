"""A tiny CNN trained on the CPU calling loss.item() every step: a run with no GPU work, so no finding
may talk about the GPU.

Recorded with bench/record_known_causes.py (the recording facts live there), each file by a process of
its own, one after the other:

    PYTHONPATH=. taskset -c 1 python3 tests/data/known_cause_item_per_step/record.py
"""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORDER = HERE.parents[2] / "bench" / "record_known_causes.py"
FILES = {"item_per_step.json.gz": "item_per_step"}

for file, case in FILES.items():
    subprocess.run([sys.executable, str(RECORDER), case, str(HERE / file)], check=True)
