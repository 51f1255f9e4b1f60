"""A public trace whose cause its authors documented: the two ResNet-50 training runs of PyTorch's
Kineto TensorBoard plugin samples (tests/data/kineto_2021_profiler_step_operator; the plugin's
tutorial, "PyTorch Profiler With TensorBoard", records the run with a single-process DataLoader,
names data loading as its bottleneck and re-records it with `num_workers=4` as the fix).

References: the authors' stated cause and fix, and the fixed run itself -- its steps, read from the
raw JSON, are what the fix really gave. The replay removes data loading altogether, which no
number of workers can beat: its prediction is a floor the fixed run's steps stay above, and the
fixed run's steps are faster than the unfixed ones.
"""

from __future__ import annotations

import gzip
import json
import re
from statistics import median

import pytest

from conftest import DATA
from xsp_trace.analyze.findings.find import find
from xsp_trace.analyze.session import open_session

pytestmark = pytest.mark.slow  # real traces

FOLDER = DATA / "kineto_2021_profiler_step_operator"
UNFIXED, FIXED = FOLDER / "tb_plugin_resnet50_num_workers_0.json.gz", FOLDER / "tb_plugin_resnet50_num_workers_4.json.gz"
STEP = re.compile(r"^ProfilerStep#(\d+)$")


def _raw_step_ns(trace) -> list[int]:
    """Each ProfilerStep#N's duration (ns) as the raw JSON has it (integer µs in this 2021 format)."""
    with gzip.open(trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    return [int(e["dur"]) * 1000 for e in events if e.get("ph") == "X" and STEP.match(str(e.get("name", "")))]


@pytest.fixture(scope="module")
def unfixed_findings(converted_path):
    con = open_session(converted_path(UNFIXED))
    return find(con)


def test_the_top_finding_is_the_documented_cause_with_its_fix(unfixed_findings):
    top = unfixed_findings[0]
    assert top.kind == "data_loading", top.text
    assert "num_workers" in top.text and "pin_memory" in top.text
    assert "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__" in top.text


def test_the_replay_is_a_floor_the_real_fix_approaches(unfixed_findings):
    """Without data loading the replay predicts each step faster than the real fix made it (workers
    still cost the CPU something), and the real fix is faster than the unfixed steps."""
    top = unfixed_findings[0]
    unfixed, fixed = _raw_step_ns(UNFIXED), _raw_step_ns(FIXED)
    assert top.facts["measured_ns"] == sum(unfixed)
    predicted_per_step = top.facts["predicted_ns"] / len(unfixed)
    assert predicted_per_step < median(fixed) < median(unfixed)


def test_the_fixed_run_has_no_data_loading_finding(converted_path):
    assert not [f for f in find(open_session(converted_path(FIXED))) if f.kind == "data_loading"]
