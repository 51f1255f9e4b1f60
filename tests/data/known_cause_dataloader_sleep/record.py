"""A tiny CNN trained from a single-process DataLoader whose __getitem__ sleeps (with_sleep), and the
same training without the sleep (without_sleep): data loading is the cause of the first's steps.

Recorded with tests/references/record_known_causes.py (the recording facts and this folder's files live there),
each file by a process of its own, one after the other:

    PYTHONPATH=. taskset -c 1 python3 tests/data/known_cause_dataloader_sleep/record.py
"""

import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
runpy.run_path(str(HERE.parents[1] / "references" / "record_known_causes.py"))["record_folder"](HERE)
