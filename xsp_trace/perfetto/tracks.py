"""The Perfetto tracks of an export: process/thread tracks, GPU device groups with one child
track per stream, lanes for work that cannot nest, counter tracks.

Runs are told apart by name: every process track and every GPU group starts with the run's
title. Perfetto identifies processes and threads by pid/tid across the whole trace, so ids
that several (run, process) or (run, thread) pairs share -- two runs of the same machine, or
pid 0 -- are replaced by fresh ones, and the real id is then written into the name.
"""

from __future__ import annotations

from collections.abc import Callable

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from .packets import PacketWriter

EXPLICIT_ORDER = pb.TrackDescriptor.EXPLICIT
NO_MERGE = pb.TrackDescriptor.SIBLING_MERGE_BEHAVIOR_NONE
LANE_RANKS = 1000  # sibling_order_rank = stream ordinal * LANE_RANKS + lane
COUNTER_RANK = 1 << 30  # device counters after every stream


INT32_MAX = (1 << 31) - 1  # Perfetto's pid and tid fields are int32


class IdAllocator:
    """Perfetto pids/tids: the recorded id where no one else uses it and int32 holds it (a 64-bit
    thread id, or one edited by hand, does not), otherwise a fresh one."""

    def __init__(self, recorded_ids):
        self._taken = {i for i in recorded_ids if i is not None and 0 < i <= INT32_MAX}
        self._next = max(self._taken, default=0) + 1
        self._given: set[int] = set()

    def assign(self, recorded: int | None) -> int:
        if recorded is not None and 0 < recorded <= INT32_MAX and recorded not in self._given:
            self._given.add(recorded)
            return recorded
        while self._next > INT32_MAX or self._next in self._taken or self._next in self._given:
            self._next = 1 if self._next > INT32_MAX else self._next + 1
        fresh = self._next
        self._next += 1
        self._given.add(fresh)
        return fresh


def _gpu_group_name(title: str, device_id, device_name) -> str:
    device = "GPU ?" if device_id is None else f"GPU {device_id}"
    return " · ".join(x for x in (title, device, device_name) if x)


def _stream_name(stream_id) -> str:
    # GPU work without a stream is device-wide (e.g. Kineto's context synchronization).
    return "all streams" if stream_id is None else f"stream {stream_id}"


class TrackRegistry:
    """Creates track descriptors (written at once through `writer`) and hands out their uuids."""

    def __init__(self, writer: PacketWriter, rows: list[dict]):
        self.writer = writer
        self._next_uuid = 1
        self.titles = {r["run_id"]: r["title"] for r in rows}
        self._process_names = {(r["run_id"], r["pid"]): r["process_name"] for r in rows if r["pid"] is not None}
        self._device_names = {(r["run_id"], r["device_id"]): r["device_name"] for r in rows if r["device_id"] is not None}
        ids = [r["pid"] for r in rows] + [r["tid"] for r in rows]
        self._ids = IdAllocator(ids)
        self._processes: dict[tuple, tuple[int, int]] = {}  # (run, pid) -> (uuid, perfetto pid)
        self.threads: dict[tuple, int] = {}  # (run, pid, tid) -> uuid
        self._thread_labels: dict[int, str] = {}  # thread uuid -> label for its lanes
        self._groups: dict[tuple, int] = {}  # (run, device) -> uuid
        self.streams: dict[tuple, int] = {}  # (run, device, stream) -> uuid
        self._stream_ordinals: dict[int, int] = {}  # stream uuid -> ordinal among its device's streams
        self._runs: dict[int, int] = {}  # run -> uuid of the run-wide track
        self._parents: dict[int, int] = {}  # lane base uuid -> parent uuid for its lanes
        self.counter_tracks = 0
        self.lane_tracks = 0
        for row in rows:
            self._declare(row)

    # -- descriptors ---------------------------------------------------------------------
    def _uuid(self) -> int:
        uuid = self._next_uuid
        self._next_uuid += 1
        return uuid

    def _declare(self, row: dict) -> None:
        run, cls = row["run_id"], row["track_class"]
        if cls == "thread":
            self.thread(run, row["pid"], row["tid"], row["thread_name"])
        elif cls == "process":
            self.process(run, row["pid"])
        elif cls == "gpu":
            self.stream(run, row["device_id"], row["stream_id"], row["stream_ordinal"])
        elif cls == "device":
            self.gpu_group(run, row["device_id"])
        else:
            self.run_track(run)

    def process(self, run: int, pid: int) -> int:
        key = (run, pid)
        if key not in self._processes:
            uuid, perfetto_pid = self._uuid(), self._ids.assign(pid)
            name = self._process_names.get(key) or "process"
            if perfetto_pid != pid:
                name = f"{name} (pid {pid})"
            descriptor = pb.TrackDescriptor(uuid=uuid)
            descriptor.process.pid = perfetto_pid
            descriptor.process.process_name = f"{self.titles[run]} · {name}"
            self.writer.track_descriptor(descriptor)
            self._processes[key] = (uuid, perfetto_pid)
            self._parents[uuid] = uuid
        return self._processes[key][0]

    def thread(self, run: int, pid: int, tid: int, thread_name: str | None = None) -> int:
        key = (run, pid, tid)
        if key not in self.threads:
            process_uuid = self.process(run, pid)
            perfetto_pid = self._processes[(run, pid)][1]
            perfetto_tid = perfetto_pid if tid == pid else self._ids.assign(tid)
            uuid = self._uuid()
            descriptor = pb.TrackDescriptor(uuid=uuid)
            descriptor.thread.pid = perfetto_pid
            descriptor.thread.tid = perfetto_tid
            name = thread_name
            if perfetto_tid != tid:
                name = f"{thread_name or 'thread'} (tid {tid})"
            if name:
                descriptor.thread.thread_name = name
            self.writer.track_descriptor(descriptor)
            self.threads[key] = uuid
            self._thread_labels[uuid] = f"{thread_name or 'thread'} {tid}"
            self._parents[uuid] = process_uuid
        return self.threads[key]

    def gpu_group(self, run: int, device_id) -> int:
        key = (run, device_id)
        if key not in self._groups:
            uuid = self._uuid()
            descriptor = pb.TrackDescriptor(
                uuid=uuid,
                name=_gpu_group_name(self.titles[run], device_id, self._device_names.get(key)),
                child_ordering=EXPLICIT_ORDER,
            )
            self.writer.track_descriptor(descriptor)
            self._groups[key] = uuid
        return self._groups[key]

    def stream(self, run: int, device_id, stream_id, ordinal: int) -> int:
        key = (run, device_id, stream_id)
        if key not in self.streams:
            group = self.gpu_group(run, device_id)
            uuid = self._uuid()
            descriptor = pb.TrackDescriptor(
                uuid=uuid,
                parent_uuid=group,
                name=_stream_name(stream_id),
                sibling_order_rank=ordinal * LANE_RANKS,
                sibling_merge_behavior=NO_MERGE,
            )
            self.writer.track_descriptor(descriptor)
            self.streams[key] = uuid
            self._stream_ordinals[uuid] = ordinal
            self._parents[uuid] = group
        return self.streams[key]

    def run_track(self, run: int) -> int:
        if run not in self._runs:
            uuid = self._uuid()
            self.writer.track_descriptor(pb.TrackDescriptor(uuid=uuid, name=self.titles[run]))
            self._runs[run] = uuid
            self._parents[uuid] = uuid
        return self._runs[run]

    def critical_path(self, run: int, on_run: int) -> int:
        """The track of a run's critical path (xsp_trace.analyze.critical_path.walk.walk), or of the part of it
        that lies on another run (rank) it waited for."""
        uuid = self._uuid()
        name = f"{self.titles[run]} · critical path" + ("" if on_run == run else f" · on run {on_run}")
        self.writer.track_descriptor(pb.TrackDescriptor(uuid=uuid, name=name))
        self._parents[uuid] = uuid
        return uuid

    def lane(self, base_uuid: int, lane: int) -> int:
        """A sibling (or child) track of `base_uuid` for slices that cannot go on it."""
        uuid = self._uuid()
        descriptor = pb.TrackDescriptor(uuid=uuid, parent_uuid=self._parents[base_uuid], sibling_merge_behavior=NO_MERGE)
        if base_uuid in self._stream_ordinals:
            stream = next(k[2] for k, v in self.streams.items() if v == base_uuid)
            descriptor.name = f"{_stream_name(stream)} · overlap {lane}"
            descriptor.sibling_order_rank = self._stream_ordinals[base_uuid] * LANE_RANKS + min(lane, LANE_RANKS - 1)
        elif base_uuid in self._thread_labels:
            descriptor.name = f"{self._thread_labels[base_uuid]} · overlapping ranges {lane}"
        else:
            descriptor.name = f"overlapping ranges {lane}"
        self.writer.track_descriptor(descriptor)
        self.lane_tracks += 1
        return uuid

    def named_child(self, parent_uuid: int, name: str) -> int:
        """A track of its own under `parent_uuid` (e.g. a thread's scheduling beside its ranges)."""
        uuid = self._uuid()
        self.writer.track_descriptor(pb.TrackDescriptor(uuid=uuid, parent_uuid=parent_uuid, name=name, sibling_merge_behavior=NO_MERGE))
        return uuid

    def counter(self, run: int, name: str, pid, device_id) -> int:
        if pid is not None:
            parent = self.process(run, pid)
            if device_id is not None:
                name = f"{name} · GPU {device_id}"
        elif device_id is not None:
            parent = self.gpu_group(run, device_id)
        else:
            parent = self.run_track(run)
        uuid = self._uuid()
        descriptor = pb.TrackDescriptor(uuid=uuid, parent_uuid=parent, name=name, sibling_order_rank=COUNTER_RANK)
        descriptor.counter.SetInParent()
        self.writer.track_descriptor(descriptor)
        self.counter_tracks += 1
        return uuid

    def base_track(self, run: int, track_class: str, pid, tid, device_id, stream_id) -> int:
        """The track of a span or mark of this class (declared up front by perfetto_tracks)."""
        if track_class == "thread":
            return self.thread(run, pid, tid)
        if track_class == "gpu":
            return self.streams[(run, device_id, stream_id)]
        if track_class == "process":
            return self.process(run, pid)
        return self.run_track(run)


class Lanes:
    """Slices of one track, emitted with their ends in order; a slice that cannot go on the
    track (it crosses an open slice, or -- for GPU streams -- overlaps anything) goes on the
    first lane track where it can."""

    def __init__(self, writer: PacketWriter, base_uuid: int, nest: bool, new_lane: Callable[[int, int], int]):
        self.writer = writer
        self.nest = nest
        self.base_uuid = base_uuid
        self.new_lane = new_lane
        self.uuids = [base_uuid]
        self.stacks: list[list[int]] = [[]]  # open slice ends per lane, innermost last

    def place(self, ts: int, end: int) -> int:
        """Close what ended by `ts`, then return the uuid of the lane the slice [ts, end) opens on."""
        slice_end = self.writer.slice_end
        for lane, stack in enumerate(self.stacks):
            uuid = self.uuids[lane]
            while stack and stack[-1] <= ts:
                slice_end(uuid, stack.pop())
            if not stack or (self.nest and end <= stack[-1]):
                stack.append(end)
                return uuid
        lane = len(self.stacks)
        self.uuids.append(self.new_lane(self.base_uuid, lane))
        self.stacks.append([end])
        return self.uuids[lane]

    def close(self) -> None:
        for uuid, stack in zip(self.uuids, self.stacks, strict=True):
            while stack:
                self.writer.slice_end(uuid, stack.pop())
