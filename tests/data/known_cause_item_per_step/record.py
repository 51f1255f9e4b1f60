"""A tiny CNN trained on the CPU calling loss.item() every step: a run with no GPU work, so no finding
may talk about the GPU.

Recorded with tests/references/record_known_causes.py (the recording facts and this folder's files live there),
each file by a process of its own, one after the other:

    PYTHONPATH=. taskset -c 1 python3 tests/data/known_cause_item_per_step/record.py
"""

import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
runpy.run_path(str(HERE.parents[1] / "references" / "record_known_causes.py"))["record_folder"](HERE)
