"""Findings from the causal story of the steps (analyses/step_causes.sql): one finding per run and
cause that holds a noticeable share of the steps' critical path, with advice for that cause only and,
where a what-if rule takes the cause away, the gain the replay predicts (critical_path/what_if.py).

A finding's severity is its cause's share of the run's steps' time on the critical path -- never of
CPU time: a wait counts only for the part the GPU had nothing to run (the path runs through the GPU
work while the GPU is busy). Steps of a run are told as one story: the finding states the cause's
share in each step (its range) and, where the steps' largest causes differ, which steps differ and
what is largest there.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping

from ...naming import DATA_LOADING_PATTERN, short_kernel_name
from ...vocabulary import FindingKind
from .record import BUSY_GPU_SHARE, CAUSE_MIN_SHARE, Finding, count, duration, pct, sql_text

# The finding kind each cause of analyses/step_causes.sql is told as (causes without one: no advice).
KIND_OF_CAUSE: dict[str, FindingKind] = {
    "data_loading": "data_loading",
    "cpu_before_gpu": "cpu_before_gpu",
    "cpu_ops": "cpu_bound",
    "optimizer": "optimizer",
    "launch": "launch_overhead",
    "sync_wait": "sync_gpu_idle",
    "gpu_compute": "gpu_bound",
    "gpu_copy": "gpu_copies",
    "communication": "communication_on_path",
    "stream_wait": "stream_wait",
    "gpu_idle": "gpu_idle_on_path",
    "cpu_idle": "unrecorded_cpu_time",
    "other_rank": "straggler_rank",
}
_TOP = 3  # names quoted per finding
_CPU_CAUSES = ("data_loading", "cpu_before_gpu", "cpu_ops", "optimizer", "launch")
_NO_SPAN = "(no span)"  # analyses/step_causes.sql's name for time charged to no span


class _Run:
    """One run's step_causes rows, by step and cause."""

    def __init__(self, rows: list[dict]):
        self.rows = rows
        self.steps: dict = {}  # step_span_id -> latency
        self.iterations: dict = {}  # step_span_id -> iteration
        self.by_cause: dict[str, list[dict]] = defaultdict(list)
        for r in rows:
            self.steps[r["step_span_id"]] = int(r["latency_ns"])
            self.iterations[r["step_span_id"]] = r["iteration"]
            self.by_cause[r["cause"]].append(r)

    @property
    def total_ns(self) -> int:
        return sum(self.steps.values())

    def largest(self) -> dict:
        """step_span_id -> its largest cause."""
        best: dict = {}
        for r in self.rows:
            if r["step_span_id"] not in best or int(r["on_path_ns"]) > int(best[r["step_span_id"]]["on_path_ns"]):
                best[r["step_span_id"]] = r
        return {k: v["cause"] for k, v in best.items()}


Gain = Callable[[int, list, str], "tuple[int, int] | None"]


def cause_findings(rows: list[dict], gpu_busy: Mapping[int, float], pytorch_runs: Collection[int], gain: Gain | None = None) -> list[Finding]:
    """The findings of every run's step causes; `gpu_busy` is each run's busiest GPU's busy share
    of its active window (runs without GPU work absent); `gain(run_id, iterations, rule)` replays
    the steps under a rule and returns (measured, predicted) ns, or None where it cannot."""
    runs: dict[int, list[dict]] = defaultdict(list)
    for r in rows:
        runs[int(r["run_id"])].append(r)
    out = []
    for run_id, run_rows in sorted(runs.items()):
        run = _Run(run_rows)
        total = run.total_ns
        if total <= 0:
            continue
        largest = run.largest()
        for cause, cause_rows in run.by_cause.items():
            kind = KIND_OF_CAUSE.get(cause)
            share = sum(int(r["on_path_ns"]) for r in cause_rows) / total
            if kind is None or share < CAUSE_MIN_SHARE:
                continue
            out.append(_finding(run_id, run, cause, kind, share, largest, gpu_busy.get(run_id), run_id in pytorch_runs, gain))
    return out


def _finding(run_id, run: _Run, cause, kind, share, largest, busy, pytorch, gain) -> Finding:
    has_gpu = busy is not None
    cause_rows = sorted(run.by_cause[cause], key=lambda r: -int(r["on_path_ns"]))
    on_path = sum(int(r["on_path_ns"]) for r in cause_rows)
    n_steps = len(run.steps)
    stepped = any(it is not None for it in run.iterations.values())
    shares = [int(r["on_path_ns"]) / run.steps[r["step_span_id"]] for r in cause_rows if run.steps[r["step_span_id"]]]
    names = _names(cause_rows, "top_names")
    regions = _names(cause_rows, "regions")
    if cause == "cpu_ops" and regions:  # name the regions (preprocess, a module) before the ops in them
        names = regions[:1] + [n for n in names if n != regions[0]]
    if stepped:
        each = ""
        if n_steps > 1:
            low, high = pct(min(shares)), pct(max(shares))
            each = f" ({low if low == high else low[:-2] + '–' + high} of each step" + (
                f", in {len(shares)} of them)" if len(shares) < n_steps else ")"
            )
        head = f"{_LABEL[cause]}: {pct(share)} of the {duration(run.total_ns)} that the {count(n_steps, 'step')} of run {run_id} spent on the critical path{each}"
    else:
        head = f"{_LABEL[cause]}: {pct(share)} of run {run_id}'s {duration(run.total_ns)} on the critical path (a run without steps, taken whole)"
    text = f"{head}; {_quote(names, cause)}. {_advice(cause, names, has_gpu, pytorch)}"
    if cause in _CPU_CAUSES and busy is not None and busy >= BUSY_GPU_SHARE:
        text += f" Its GPU was busy {pct(busy)} of its active window, close behind the CPU: shortening the CPU side alone gains only until the GPU's own work sets the pace."
    differ = [sid for sid, c in largest.items() if c != cause]
    if stepped and 0 < len(differ) < n_steps / 2:  # the largest cause in most steps: say where it is not
        others = sorted({largest[sid] for sid in differ})
        text += f" It is the largest cause in {n_steps - len(differ)} of {n_steps} steps; in iteration(s) {_iterations(run, differ)} the largest is {'; '.join(_LABEL[o] for o in others)}."
    facts = {
        "run_id": run_id,
        "cause": cause,
        "on_path_ns": on_path,
        "steps_ns": run.total_ns,
        "iterations": sorted((run.iterations[sid] for sid in run.steps), key=lambda i: (i is None, i)),
        "names": names,
    }
    rule = _rule(cause, names, regions if stepped else [])  # a run taken whole: its outermost spans can hold all of it
    if rule is not None and gain is not None:
        measured_predicted = gain(run_id, facts["iterations"], rule)
        if measured_predicted is not None:
            measured, predicted = measured_predicted
            saved = measured - predicted
            facts.update({"what_if": rule, "expected_gain_ns": saved, "measured_ns": measured, "predicted_ns": predicted})
            what = f"its largest region, {regions[0]}," if cause == "cpu_ops" else "it"
            text += f" The replay without {what} (--what-if '{rule}') predicts {duration(predicted)} instead of {duration(measured)}: {pct(saved / measured if measured else 0)} less."
    return Finding(kind, share, text, "step_causes", f"run_id = {run_id} AND cause = '{sql_text(cause)}'", facts)


_LABEL = {
    "data_loading": "Data loading",
    "cpu_before_gpu": "CPU work before the step's first GPU work",
    "cpu_ops": "CPU work in framework ops and Python",
    "optimizer": "The optimizer's CPU work",
    "launch": "Launching GPU work (launch calls and launch latency)",
    "sync_wait": "Waiting on the GPU after its work had ended",
    "gpu_compute": "GPU computation",
    "gpu_copy": "GPU copies and sets",
    "communication": "Communication",
    "stream_wait": "Streams stalled with work queued behind other streams",
    "gpu_idle": "GPU idle between dependent work",
    "cpu_idle": "Time in no recorded span",
    "other_rank": "Waiting for other ranks",
    "thread_wait": "Hand-offs between threads",
}


def _names(rows: list[dict], column: str) -> list[str]:
    """Names of a column's lists over the steps, by how often they lead, first seen first."""
    seen: dict[str, int] = {}
    for r in rows:
        for i, name in enumerate(r.get(column) or []):
            seen[name] = min(seen.get(name, i), i)
    return sorted(seen, key=lambda n: (seen[n], n))


def _quote(names: list[str], cause: str) -> str:
    names = [n for n in names if n != _NO_SPAN]
    if not names:
        return "no recorded span holds it"
    shown = [short_kernel_name(n) if cause in ("gpu_compute", "communication") else n for n in names[:_TOP]]
    return "mostly " + ", ".join(shown)


def _iterations(run: _Run, step_ids: list) -> str:
    return ", ".join(str(run.iterations[s]) for s in sorted(step_ids, key=lambda s: run.iterations[s] or 0)[:5])


def _advice(cause: str, names: list[str], has_gpu: bool, pytorch: bool) -> str:
    torch_words = pytorch
    if cause == "data_loading":
        if not torch_words:
            return "Load the next batch ahead of the step (worker processes, prefetching) so the step does not wait for it."
        pin = " and pin them (pin_memory=True) for the copy to the GPU" if has_gpu else ""
        return f"Load batches in worker processes (DataLoader num_workers > 0, persistent_workers, prefetch_factor){pin} so the next batch is ready when the step starts."
    if cause == "cpu_before_gpu":
        return "Move this work out of the step or overlap it with the GPU's work (a data-loading worker, a prefetching queue)."
    if cause == "cpu_ops":
        if not has_gpu:
            return "A CPU-only run: its steps are this computation; the regions named hold most of it."
        return "The GPU waits for the CPU to issue work: fewer, larger ops (torch.compile, fused ops, CUDA graphs) shorten it."
    if cause == "optimizer":
        return (
            "A fused or foreach optimizer (fused=True / foreach=True) issues far fewer ops."
            if torch_words
            else "Fuse the optimizer's per-parameter work."
        )
    if cause == "launch":
        return "Fewer, larger kernels (fusion, torch.compile) or CUDA graphs cut the launches."
    if cause == "sync_wait":
        return "These calls returned only after the GPU had drained its queue: move them (.item(), .cpu(), .tolist(), blocking copies) out of the loop, or copy non_blocking from pinned memory."
    if cause == "gpu_compute":
        return "The GPU's own work sets the step: faster kernels shorten it (top_kernels, kernel_roofline); work on the CPU side would not."
    if cause == "gpu_copy":
        pageable = bool(names) and "Pageable" in names[0]
        return (
            "Copies from pageable memory run slower and block: pin the host memory (pin_memory=True)."
            if pageable
            else "Fewer or smaller copies, or copies overlapped with computation on another stream, shorten it."
        )
    if cause == "communication":
        return "Overlap communication with computation (bucketing, async collectives, prefetching the next layer's parameters)."
    if cause == "stream_wait":
        return (
            "Work was queued on one stream while it waited for another stream's work (events, graph dependencies): see critical_path for the streams."
        )
    if cause == "gpu_idle":
        return "The stream sat idle between dependent items."
    if cause == "cpu_idle":
        return "The trace does not say what the thread did meanwhile (Python without with_stack, another process): record more to see it."
    if cause == "other_rank":
        return "A collective waited for a later rank: balance the ranks' work (rank_skew)."
    return ""


def _rule(cause: str, names: list[str], regions: list[str]) -> str | None:
    """The what-if rule that takes the cause away, or None where no rule can."""
    if cause == "data_loading":
        return f"region:{DATA_LOADING_PATTERN}=0"
    if cause == "cpu_ops" and regions:  # the largest region: what a user would move or speed up first
        return "region:^" + re.escape(regions[0]) + "$=0"
    if cause == "cpu_before_gpu" and regions:
        return f"region:{_any_of(regions)}=0"
    if cause == "sync_wait" and names:
        return f"sync:{_any_of(names)}=0"
    if cause == "communication":
        return "communication:.*=0"
    if cause == "launch" and names:
        return f"api:{_any_of(names)}=0"
    return None


def _any_of(names: list[str]) -> str:
    """A regular expression matching exactly one of the first ten names."""
    return "^(" + "|".join(re.escape(n) for n in names[:10]) + ")$"
