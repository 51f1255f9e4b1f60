"""Per kernel name, count and total duration equal Holistic Trace Analysis's on the same trace.

HTA 0.5.0 is the reference. Its own rounding (documented in docs/kineto.md): traces with
float timestamps get ts -> ceil(ts) and end -> floor(ts + dur) in float64 µs, so each of its
kernel durations is a whole number of µs, up to 2 µs shorter than the recorded one; integer-µs
traces are used as they are. We apply exactly that rule to our integer-ns spans and require
equality -- and, separately, that our ns durations lie within that rounding of HTA's.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from kineto_cases import GPU_CASES, KINETO_TRACES, hta_kernel_reference, hta_rounded_duration_us

pytestmark = pytest.mark.slow  # reference tools on real traces


@pytest.mark.parametrize("case", GPU_CASES)
def test_kernel_breakdown_matches_hta(case, converted, tmp_path):
    path = KINETO_TRACES[case]
    reference = hta_kernel_reference(path, tmp_path)
    db = converted(path)
    rows = db.execute("SELECT name, start_ns, end_ns FROM spans WHERE kind = 'kernel'").fetchall()
    ours: dict[str, list] = defaultdict(lambda: [0, 0.0, 0])
    for name, start, end in rows:
        entry = ours[name]
        entry[0] += 1
        entry[1] += hta_rounded_duration_us(start, end, reference["rounds"])
        entry[2] += end - start
    hta = reference["kernels"]
    assert hta, "HTA found no kernels"
    assert set(ours) == set(hta)
    for name, (count, hta_sum_us) in hta.items():
        our_count, our_sum_hta_rounding, our_sum_ns = ours[name]
        assert our_count == count, name
        assert our_sum_hta_rounding == hta_sum_us, name
        # Our exact durations: never shorter than HTA's, longer by less than HTA's 2 µs per kernel.
        slack_ns = 2000 * count if reference["rounds"] else 0
        assert hta_sum_us * 1000 <= our_sum_ns <= hta_sum_us * 1000 + slack_ns, name
    # HTA's breakdown table (the report users read) agrees for every kernel name it lists.
    for name, total_us in reference["breakdown"].items():
        if name in ours:
            assert ours[name][1] == total_us, name
