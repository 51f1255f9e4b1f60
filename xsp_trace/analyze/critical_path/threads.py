"""Cross-thread waits of the critical path: a thread that sits in a span's own time (no child
running) while another thread of the same process works, and resumes when that work ends --
PyTorch's step thread inside the backward call while the autograd engine's thread runs the backward
ops -- is on the path through the other thread's work, not through its own (empty) time.

Two edges, both computed for every elementary segment of every thread at once (numpy), read by the
chase (chase.py) and by the step-by-step walk (walk.py):
- wait -> worker: at the end t of a segment [w0, t) of thread A whose owner may wait (the own time
  of an annotation or a Python function: code the trace does not record), when another thread B of
  the process worked (in spans other than runtime calls) for at least BUSY_SHARE of it, ended its last work at e inside it no earlier
  than t - TOLERANCE_NS, and is idle at t: the path goes from t to B at e, [e, t) booked as THREAD_WAIT on A's span. Of
  several such threads, the one that ended last.
- worker -> waiter: at the start g1 of B's work after an idle gap (from g0), when another thread A of
  the process is at g1 in such an own-time segment [w0, w1) that began at w0 >= g0 (A started
  waiting while B was idle, and B then started) and B worked for at least BUSY_SHARE of it: the path goes from g1 to A at w0, [w0, g1) booked as THREAD_WAIT
  on A's span. Of several such threads, the one that began waiting last.
The assumption, stated as HTA states its own (a thread's CPU spans run serially): a thread that
resumes just after another thread of its process finished waited for it, and a thread that starts
working while another one of its process waits was started by it. The trace records no hand-off
between threads; TOLERANCE_NS bounds the time from the worker's last recorded op to the waiter's
resumption (untraced bookkeeping of the worker and the wake-up).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# A wait is one only while the other thread works for at least this share of it (a thread that
# made one short call during a long stretch of another thread's untraced code was not waited for);
# between its recorded ops the worker runs untraced code too (the autograd engine's thread records
# ops for about a third of the last stretch of a backward wait).
BUSY_SHARE = 0.25
# The most time from the worker's last recorded op to the waiter resuming: PyTorch's autograd engine
# finishes a backward pass with untraced work (its final callbacks) before the caller wakes.
TOLERANCE_NS = 200_000


class CrossEdges(NamedTuple):
    """The edges by global segment index (the threads' segments concatenated, as in the chase)."""

    fwd: np.ndarray  # waiting segment -> the other thread's segment the path goes to from its end (-1: none)
    wait_row: np.ndarray  # waiting segment -> its owner, the span the hand-off is booked on
    back_t: np.ndarray  # working segment after an idle gap -> where the path goes from its start (-1: none)
    back_thread: np.ndarray  # ... on that thread (index into keys)
    back_node: np.ndarray  # ... to its segment ending there (-1: none, a gap ends there)
    back_row: np.ndarray  # ... the waiting span the hand-off is booked on


# Span kinds whose own time is code the trace does not record -- where a thread can wait for
# another: an annotation (a ProfilerStep, a user range) or a Python function. An operator's or a
# runtime call's own time is its own work (a call that waits for the GPU is a sync edge).
WAITING_KINDS = ("annotation", "other")


# The kind of span that is a runtime call: a thread that only makes such calls between idle
# stretches (a watchdog polling events) does no work another thread waits for.
API_KIND = "api"


def roles(kind, blocking: np.ndarray, launchers: np.ndarray) -> np.ndarray:
    """Rows whose own time can be a wait for another thread (bit 1) or that are work (bit 2):
    the mask cross_edges reads. `kind`: the run's kinds (run.Labels, or strings)."""
    waiting = kind.isin(WAITING_KINDS) if hasattr(kind, "isin") else np.isin(kind, WAITING_KINDS)  # codes: no string per row
    waits = waiting & ~blocking & ~launchers
    return waits.astype(np.int8) | np.where(kind != API_KIND, 2, 0).astype(np.int8)


def cross_edges(
    keys: list[tuple[int, int]],
    first: np.ndarray,
    last: np.ndarray,
    seg_start: np.ndarray,
    seg_end: np.ndarray,
    seg_owner: np.ndarray,
    waits: np.ndarray,
) -> CrossEdges:
    """The cross-thread edges of the threads `keys` (pid, tid), their segments from first[k] to last[k];
    `waits`: roles of every row."""
    total = len(seg_start)
    fwd, wait_row = np.full(total, -1, dtype=np.int64), np.full(total, -1, dtype=np.int64)
    fwd_e = np.full(total, np.iinfo(np.int64).min, dtype=np.int64)
    back_t, back_thread = np.full(total, -1, dtype=np.int64), np.full(total, -1, dtype=np.int64)
    back_node, back_row = np.full(total, -1, dtype=np.int64), np.full(total, -1, dtype=np.int64)
    role = np.where(seg_owner >= 0, waits[np.maximum(seg_owner, 0)], 0) if total else np.zeros(0, dtype=np.int8)
    owner_waits, busy = (role & 1) > 0, (role & 2) > 0
    for a, key_a in enumerate(keys):
        la, ha = int(first[a]), int(last[a])
        if not owner_waits[la:ha].any():  # a thread that never waits (the runtime's, a worker's)
            continue
        for b, key_b in enumerate(keys):
            if a == b or key_a[0] != key_b[0]:
                continue
            lb, hb = int(first[b]), int(last[b])
            b_busy = lb + np.flatnonzero(busy[lb:hb])  # B's work: segments of its spans other than runtime calls
            if len(b_busy) == 0:
                continue
            work_before = _work_before(seg_start[b_busy], seg_end[b_busy])
            # wait -> worker, from the end of every waiting segment of A
            segs = la + np.flatnonzero(owner_waits[la:ha])
            t = seg_end[segs]
            at = np.searchsorted(seg_end[b_busy], t, side="right") - 1
            e = seg_end[b_busy[np.maximum(at, 0)]]  # B's last work ending by t
            next_start = seg_start[b_busy[np.minimum(at + 1, len(b_busy) - 1)]]
            idle_at_t = (at + 1 >= len(b_busy)) | (next_start >= t)
            target = b_busy[np.maximum(at, 0)]
            # at the same instant only to work that is not a wait itself (no hand-off back and forth)
            moves = (e < t) | ~owner_waits[target]
            worked = work_before(t) - work_before(seg_start[segs]) >= BUSY_SHARE * (t - seg_start[segs])
            ok = (at >= 0) & (e > seg_start[segs]) & (e >= t - TOLERANCE_NS) & idle_at_t & moves & worked & (e > fwd_e[segs])
            fwd[segs[ok]], fwd_e[segs[ok]], wait_row[segs[ok]] = b_busy[at[ok]], e[ok], seg_owner[segs[ok]]
            # worker -> waiter, from the start of B's work after each idle gap
            starts = seg_start[b_busy]
            prev_end = np.concatenate(([np.iinfo(np.int64).min], seg_end[b_busy[:-1]]))
            after_gap = starts > prev_end
            g1, g0, work = starts[after_gap], prev_end[after_gap], b_busy[after_gap]
            k = la + np.searchsorted(seg_end[la:ha], g1, side="right")  # A's segment running at g1
            inside = k < ha
            kk = np.minimum(k, max(ha - 1, la))
            w0 = seg_start[kk]
            w1 = seg_end[kk]
            worked = work_before(w1) - work_before(w0) >= BUSY_SHARE * (w1 - w0)
            ok = inside & owner_waits[kk] & (w0 >= g0) & (w0 < g1) & worked & (w0 > back_t[work])
            work, kk, w0 = work[ok], kk[ok], w0[ok]
            back_t[work], back_thread[work], back_row[work] = w0, a, seg_owner[kk]
            touching = (kk > la) & (seg_end[np.maximum(kk - 1, 0)] == w0)
            back_node[work] = np.where(touching, kk - 1, -1)
    return CrossEdges(fwd, wait_row, back_t, back_thread, back_node, back_row)


def _work_before(starts: np.ndarray, ends: np.ndarray):
    """For a thread's working segments (in order, not overlapping): t -> the time it worked before t."""
    done = np.concatenate(([0], np.cumsum(ends - starts)))

    def before(t: np.ndarray) -> np.ndarray:
        j = np.searchsorted(ends, t, side="right")  # segments ended by t
        running = np.where(j < len(starts), np.clip(t - starts[np.minimum(j, len(starts) - 1)], 0, None), 0)
        return done[j] + running

    return before
