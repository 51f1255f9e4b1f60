"""Benchmark of the Perfetto export: slices written per second, bytes per slice, peak memory.

Inputs: the largest nsys fixture (the PyTorch 2xH100 export, 27k spans) converted as it is,
and grown k-fold with bench/peers/make_scaled_nsys.py (every copy nests and links like the original).
Each measurement runs in a fresh process (peak RSS from getrusage).

Peer, measured in the same run on the same database: the perfetto package's own documented
way to build a trace, `perfetto.trace_builder.proto_builder.TraceProtoBuilder` (the whole
Trace message in memory, names as plain strings, no interning), fed by one DuckDB fetchall()
of the spans in track order, writing the same begin/end slices with the same annotations
(its flows and lanes are left out, so it does less work than the export).

    python -m bench.peers.perfetto_export --copies 1,10,40
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import time
from pathlib import Path

from .children import module_command
from .make_scaled_nsys import grow
from .scaled_inputs import DATA, NSYS_FIXTURE


def database_for(copies: int) -> Path:
    """The fixture grown `copies`-fold, converted (cached in bench/data/)."""
    from xsp_trace.convert import ConvertOptions, convert_files

    DATA.mkdir(parents=True, exist_ok=True)
    database = DATA / f"h100_x{copies}.duckdb"
    if not database.exists():
        source = NSYS_FIXTURE
        if copies > 1:
            source = DATA / f"h100_x{copies}.sqlite"
            if not source.exists():
                grow(NSYS_FIXTURE, source, copies)
        convert_files([source], database, ConvertOptions())
    return database


def run_xsp(database: Path, output: Path) -> dict:
    from xsp_trace.perfetto import export_perfetto

    stats = export_perfetto(database, output)
    return {"slices": stats.slices, "flows": stats.flows}


def run_peer(database: Path, output: Path) -> dict:
    import duckdb
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
    from perfetto.trace_builder.proto_builder import TraceProtoBuilder

    con = duckdb.connect(str(database), read_only=True)
    rows = con.execute(
        """SELECT s.run_id, s.pid, s.tid, s.device_id, s.stream_id, s.name, s.kind, s.start_ns, s.end_ns,
                  s.span_id, s.correlation_id, s.category, k.registers_per_thread, m.bytes
           FROM spans s LEFT JOIN kernels k USING (run_id, span_id) LEFT JOIN memops m USING (run_id, span_id)
           ORDER BY s.run_id, s.tid IS NULL, s.pid, s.tid, s.device_id, s.stream_id, s.start_ns, s.end_ns DESC, s.depth"""
    ).fetchall()
    builder = TraceProtoBuilder()
    tracks: dict = {}
    stacks: dict = {}
    for run, pid, tid, device, stream, name, kind, start, end, span_id, corr, category, regs, nbytes in rows:
        key = (run, pid, tid) if tid is not None else (run, device, stream)
        if key not in tracks:
            uuid = tracks[key] = len(tracks) + 1
            packet = builder.add_packet()
            packet.track_descriptor.uuid = uuid
            if tid is not None:
                packet.track_descriptor.thread.pid, packet.track_descriptor.thread.tid = pid, tid
            else:
                packet.track_descriptor.name = f"run {run} GPU {device} stream {stream}"
            stacks[key] = []
        uuid, stack = tracks[key], stacks[key]
        while stack and stack[-1] <= start:
            packet = builder.add_packet()
            packet.timestamp, packet.trusted_packet_sequence_id = stack.pop(), 1
            packet.track_event.type, packet.track_event.track_uuid = pb.TrackEvent.TYPE_SLICE_END, uuid
        packet = builder.add_packet()
        packet.timestamp, packet.trusted_packet_sequence_id = start, 1
        event = packet.track_event
        event.type, event.track_uuid, event.name = pb.TrackEvent.TYPE_SLICE_BEGIN, uuid, name
        event.categories.append(kind)
        for key_name, value in (("span_id", span_id), ("correlation_id", corr), ("registers_per_thread", regs), ("bytes", nbytes)):
            if value is not None:
                annotation = event.debug_annotations.add()
                annotation.name, annotation.int_value = key_name, value
        if category is not None:
            annotation = event.debug_annotations.add()
            annotation.name, annotation.string_value = "category", category
        stack.append(end)
    for key, stack in stacks.items():
        while stack:
            packet = builder.add_packet()
            packet.timestamp, packet.trusted_packet_sequence_id = stack.pop(), 1
            packet.track_event.type, packet.track_event.track_uuid = pb.TrackEvent.TYPE_SLICE_END, tracks[key]
    output.write_bytes(builder.serialize())
    return {"slices": len(rows), "flows": 0}


def child(which: str, database: Path, output: Path) -> None:
    t0 = time.perf_counter()
    result = (run_xsp if which == "xsp" else run_peer)(database, output)
    seconds = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({**result, "seconds": seconds, "peak_mb": peak_mb, "bytes": output.stat().st_size}))


def measure(which: str, database: Path) -> dict:
    output = DATA / f"{database.stem}.{which}.pftrace"
    done = subprocess.run(
        module_command("bench.peers.perfetto_export", "--child", which, database, output), check=True, capture_output=True, text=True
    )
    output.unlink()
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", default="1,10,40", help="comma-separated growth factors of the fixture")
    parser.add_argument("--child", nargs=3, metavar=("WHICH", "DB", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]), Path(args.child[2]))
        return
    print("| input | spans | tool | seconds | slices/s | bytes/slice | peak RSS MB |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
    for copies in (int(c) for c in args.copies.split(",")):
        database = database_for(copies)
        for which, label in (("xsp", "xsp-trace perfetto (streamed)"), ("peer", "TraceProtoBuilder (in memory)")):
            r = measure(which, database)
            print(
                f"| H100 nsys x{copies} | {r['slices']:,} | {label} | {r['seconds']:.2f} | "
                f"{r['slices'] / r['seconds']:,.0f} | {r['bytes'] / r['slices']:.1f} | {r['peak_mb']:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
