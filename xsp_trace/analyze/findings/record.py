"""What every finding shares: the Finding record, the thresholds, and the wording helpers (durations,
shares, sizes) -- read by find.py and step_causes.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...vocabulary import FindingKind
from ..catalog import BY_NAME

# Thresholds. Each is a judgement; the reason is beside it.
MIN_SEVERITY = 0.01  # below 1 % of the time it is measured against, fixing a finding cannot pay back noticeably
BUSY_GPU_SHARE = 0.8  # a GPU busy this much of its active window runs close behind the CPU: CPU work on the
#                       critical path then has little slack, and removing it gains far less than its share
CAUSE_MIN_SHARE = 0.05  # a cause under 5 % of the steps' critical path: removing it entirely could not pay back
#                         more than the step-to-step spread of a typical training loop, so it gets no finding
NON_GPU_LAYER_PCT = 50.0  # a layer whose kernels cover less than half its latency is dominated by non-GPU time
PROFILING_OVERHEAD_PCT = 25.0  # ranges cost microseconds per layer call; a level adding over a quarter of the model
#                                latency has very short layers or made the model run another program (a hook turns
#                                off nn.TransformerEncoderLayer's fused path: docs/design.md)
SPREAD_FACTOR = 10.0  # a capture whose model-latency p90 is over 10x its median is dominated by outliers: its means
#                      and bootstrap intervals describe the outliers, not the model


@dataclass(frozen=True)
class Finding:
    kind: FindingKind
    severity: float  # share of the time at stake, 0..1 (the ranking key)
    text: str  # one sentence with the numbers
    analysis: str  # the analysis that shows it (catalog name)
    where: str  # a condition on that analysis's columns selecting the rows that show it
    facts: dict = field(default_factory=dict, compare=False)  # the numbers the text states, unrounded

    @property
    def evidence(self) -> str:
        """What shows the finding's rows, runnable as written: SQL where the analysis is a view in the
        database's schema xsp (xsp_trace/analyze/install.py), in any DuckDB client or `xsp-trace
        query`; the analyze command where it is computed in Python (the critical path's analyses)."""
        if BY_NAME[self.analysis].builds:
            return f"xsp-trace analyze DB -a {self.analysis} (rows where {self.where})"
        return f"SELECT * FROM xsp.{self.analysis} WHERE {self.where}"


# -- wording ------------------------------------------------------------------------------------


def duration(ns: float) -> str:
    """A duration in the unit people read it in: 1.23 s, 45.6 ms, 7.8 µs, 90 ns."""
    ns = float(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def pct(share: float) -> str:
    return f"{100 * share:.1f} %"


def size(nbytes: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(nbytes) >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} B"


def count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def gpu_label(run_id: int, device_id: int, rank=None) -> str:
    return f"GPU {device_id} of run {run_id}" + (f" (rank {rank})" if rank is not None else "")


def ms_to_ns(value) -> float:
    return float(value or 0) * 1e6


def sql_text(text: str) -> str:
    return str(text).replace("'", "''")
