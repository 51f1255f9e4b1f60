"""The same tiny CNN inference twice: baseline, and slower_layer where features.3 (inside its
record_function range) sleeps before running: the diff's cause is that one layer.

Recorded with tests/references/record_known_causes.py (the recording facts and this folder's files live there),
each file by a process of its own, one after the other:

    PYTHONPATH=. taskset -c 1 python3 tests/data/diff_pair_slower_layer/record.py
"""

import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
runpy.run_path(str(HERE.parents[1] / "references" / "record_known_causes.py"))["record_folder"](HERE)
