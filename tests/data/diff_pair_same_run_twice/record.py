"""The identical tiny CNN inference recorded twice: a diff with no cause (only run-to-run noise).

Recorded with tests/references/record_known_causes.py (the recording facts and this folder's files live there),
each file by a process of its own, one after the other:

    PYTHONPATH=. taskset -c 1 python3 tests/data/diff_pair_same_run_twice/record.py
"""

import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
runpy.run_path(str(HERE.parents[1] / "references" / "record_known_causes.py"))["record_folder"](HERE)
