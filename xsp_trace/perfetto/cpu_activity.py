"""CPU samples and thread states (nsys --sample=cpu) in the Perfetto export.

Samples are instants on their thread's track (named after the sampled function). Thread states go
on a track of their own beside the thread's, one per thread: a switch does not nest with the
thread's ranges (a range may start while the thread runs and end after it was switched out), and
slices on one track must nest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .packets import PacketWriter
from .tracks import TrackRegistry

SAMPLE_CATEGORY = "cpu_sample"
STATE_CATEGORY = "thread_state"


def write_cpu_activity(writer: PacketWriter, tracks: TrackRegistry, rows: Callable[[str], Iterable[dict[str, Any]]]) -> tuple[int, int]:
    """Write the samples and thread states `rows(query)` gives; returns (instants, slices)."""
    instants = 0
    for row in rows("perfetto/cpu_samples"):
        uuid = tracks.thread(row["run_id"], row["pid"], row["tid"])
        args = [(k, row[k]) for k in ("module", "thread_state") if row[k] is not None]
        writer.instant(uuid, row["ts"], row["name"], SAMPLE_CATEGORY, args)
        instants += 1
    slices = 0
    state_tracks: dict[tuple, int] = {}
    for row in rows("perfetto/thread_states"):
        key = (row["run_id"], row["pid"], row["tid"])
        if key not in state_tracks:
            state_tracks[key] = _state_track(tracks, *key)
        int_args = [("cpu", row["cpu"])] if row["cpu"] is not None else []
        writer.slice_begin(state_tracks[key], row["ts"], row["name"], STATE_CATEGORY, int_args)
        writer.slice_end(state_tracks[key], row["end_ts"])
        slices += 1
    return instants, slices


def _state_track(tracks: TrackRegistry, run: int, pid: int, tid: int) -> int:
    """A track beside the thread's (a child of its process) named after it."""
    tracks.thread(run, pid, tid)
    return tracks.named_child(tracks.process(run, pid), f"thread {tid} · scheduling")
