"""Decompression and input limits of convert: a gzip bomb, a huge string, a pipe past the size cap
and a trace of very many threads stop with one line (exit 2) or convert, quickly, leaving nothing in
$TMPDIR; the overrides let a real high-ratio input through. References: the raw JSON."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import threading
import time
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from kineto_cases import KINETO_TRACES
from xsp_trace.cli import app
from xsp_trace.convert import ConvertOptions, convert_files, input_limits, nesting
from xsp_trace.convert.input_limits import MAX_VALUE_BYTES, InputLimits
from xsp_trace.errors import InputError

pytestmark = pytest.mark.slow  # decompression bombs and real traces past the limits

runner = CliRunner()
EVENT = b'{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 10, "dur": 2}'
HEAD = b'{"schemaVersion": 1, "traceEvents": [' + EVENT
TAIL = b'], "traceName": "bomb"}'


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """$TMPDIR for the code under test (Kineto pieces, pipe copies, DuckDB spills), checked afterwards."""
    folder = tmp_path / "TMPDIR"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.delenv(input_limits.RATIO_ENV, raising=False)
    monkeypatch.delenv(input_limits.SIZE_ENV, raising=False)
    return folder


class PeakSize:
    """The most bytes seen under a folder while the block runs (sampled every 10 ms)."""

    def __init__(self, folder: Path):
        self.folder, self.peak, self._stop = folder, 0, threading.Event()

    def _size(self) -> int:
        total = 0
        for root, _dirs, files in os.walk(self.folder):
            for name in files:
                try:
                    total += os.stat(os.path.join(root, name)).st_size
                except OSError:
                    pass
        return total

    def _watch(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self._size())

    def __enter__(self) -> PeakSize:
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def gzip_bomb(path: Path, body: bytes, repeats: int, head: bytes = HEAD, tail: bytes = TAIL) -> Path:
    """head + body * repeats + tail as a multi-member gzip file: `body` is compressed once and its
    member written `repeats` times (gzip readers join members), so a GiB costs a few ms and ~1 MB."""
    member = gzip.compress(body, 9)
    with open(path, "wb") as f:
        f.write(gzip.compress(head))
        for _ in range(repeats):
            f.write(member)
        f.write(gzip.compress(tail))
    return path


def one_line_failure(args: list, source: Path) -> tuple[str, float]:
    """Run convert; it must exit 2 with one stderr line naming `source`, no traceback. (line, seconds)"""
    started = time.monotonic()
    result = runner.invoke(app, ["convert", *map(str, args), "-q"])
    elapsed = time.monotonic() - started
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"xsp-trace: error: {source}: ")
    assert "Traceback" not in result.output
    return lines[0], elapsed


BOMBS = {
    # 1 GiB of events (each 98 bytes, all alike), ~1 MB on disk
    "events": (b", " + EVENT) * ((16 << 20) // (len(EVENT) + 2)),
    # 1 GiB of whitespace between two events
    "whitespace": b" " * (16 << 20),
}


@pytest.mark.parametrize("kind", BOMBS)
def test_a_gzip_bomb_stops_with_one_line_in_seconds_and_leaves_nothing(kind, tmp_path, private_tmp):
    bomb = gzip_bomb(tmp_path / "bomb.json.gz", BOMBS[kind], 64)
    assert bomb.stat().st_size < 4 << 20
    out = tmp_path / "out.duckdb"
    with PeakSize(private_tmp) as tmp_use:
        line, seconds = one_line_failure([bomb, "-o", out], bomb)
    assert "decompresses more than 100x" in line and "--max-gzip-ratio" in line
    assert seconds < 30  # 0.5-2 s here; the bomb holds 1 GiB
    # Decompressed before the stop: 64 MiB (where a ratio is first judged) and one chunk, copied
    # at most once into $TMPDIR.
    assert tmp_use.peak <= input_limits.RATIO_FLOOR_BYTES + (2 << 20)
    assert list(private_tmp.iterdir()) == []
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["TMPDIR", "bomb.json.gz"]


def test_the_python_reader_stops_a_bomb_the_same_way(tmp_path, private_tmp):
    bomb = gzip_bomb(tmp_path / "bomb.json.gz", BOMBS["whitespace"], 64)  # whitespace: no 64 MiB of events to parse first
    with pytest.raises(InputError) as error:
        convert_files([bomb], tmp_path / "out.duckdb", ConvertOptions(kineto_reader="python"))
    assert "decompresses more than 100x" in error.value.problem
    assert list(private_tmp.iterdir()) == []


def identical_events_trace(path: Path, count: int) -> Path:
    """A valid trace of `count` zero-length ops at one time on one thread: gzip makes it tiny."""
    events = b", ".join([b'{"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 10, "dur": 0}'] * count)
    path.write_bytes(gzip.compress(b'{"traceEvents": [' + events + b"]}", 9))
    return path


def test_the_overrides_let_a_real_high_ratio_trace_through(tmp_path, private_tmp, monkeypatch):
    # Scaled: the ratio is judged from 64 MiB of JSON on; here from the first byte, on a 1.8 MB trace.
    monkeypatch.setattr(input_limits, "RATIO_FLOOR_BYTES", 0)
    trace = identical_events_trace(tmp_path / "same.json.gz", 20_000)
    ratio = len(gzip.decompress(trace.read_bytes())) / trace.stat().st_size
    assert ratio > 200
    raw_ops = sum(1 for e in json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"] if e["cat"] == "cpu_op")
    line, _ = one_line_failure([trace, "-o", tmp_path / "refused.duckdb"], trace)
    assert "decompresses more than 100x" in line
    for name, args, env in [
        ("option", ["--max-gzip-ratio", str(int(ratio) + 1)], None),
        ("off", ["--max-gzip-ratio", "0"], None),
        ("env", [], str(int(ratio) + 1)),
    ]:
        if env is not None:
            monkeypatch.setenv(input_limits.RATIO_ENV, env)
        out = tmp_path / f"{name}.duckdb"
        result = runner.invoke(app, ["convert", str(trace), "-o", str(out), "-q", *args])
        assert result.exit_code == 0, result.output
        with duckdb.connect(str(out), read_only=True) as con:
            assert con.execute("SELECT count(*) FROM spans WHERE kind = 'op'").fetchone()[0] == raw_ops
    monkeypatch.setenv(input_limits.RATIO_ENV, str(int(ratio) - 1))  # the environment sets the limit when no option does
    line, _ = one_line_failure([trace, "-o", tmp_path / "again.duckdb"], trace)
    assert f"more than {int(ratio) - 1}x" in line
    assert list(private_tmp.iterdir()) == []


def test_the_size_cap_stops_a_real_trace_only_below_its_size(tmp_path, private_tmp, monkeypatch):
    trace = KINETO_TRACES["kineto_nccl_collectives"]
    size = len(gzip.decompress(trace.read_bytes()))
    line, _ = one_line_failure([trace, "-o", tmp_path / "a.duckdb", "--max-input-size", f"{size // 2}"], trace)
    assert "decompresses to more than" in line and "--max-input-size" in line
    monkeypatch.setenv(input_limits.SIZE_ENV, "1MB")
    line, _ = one_line_failure([trace, "-o", tmp_path / "b.duckdb"], trace)
    assert "more than 1.0 MiB of trace" in line
    result = runner.invoke(app, ["convert", str(trace), "-o", str(tmp_path / "c.duckdb"), "-q", "--max-input-size", f"{size + 1}"])
    assert result.exit_code == 0, result.output
    assert list(private_tmp.iterdir()) == []


def test_a_pipe_is_copied_no_further_than_the_size_cap(tmp_path, private_tmp, monkeypatch):
    fifo = tmp_path / "endless.fifo"
    os.mkfifo(fifo)
    stop = threading.Event()

    def write_forever() -> None:
        try:
            with open(fifo, "wb") as f:
                f.write(HEAD)
                while not stop.is_set():
                    f.write((b", " + EVENT) * 10_000)
        except BrokenPipeError:
            pass

    writer = threading.Thread(target=write_forever, daemon=True)
    writer.start()
    time.sleep(0.2)  # the writer waits in open(): a reader that comes first would see no writer, an empty pipe
    monkeypatch.setenv(input_limits.SIZE_ENV, "8MB")
    with PeakSize(private_tmp) as tmp_use:
        line, seconds = one_line_failure([fifo, "-o", tmp_path / "out.duckdb"], fifo)
    stop.set()
    writer.join(10)
    assert "runs to more than 8.0 MiB of trace" in line
    assert tmp_use.peak <= (8 << 20) + (1 << 20)
    assert list(private_tmp.iterdir()) == []


def long_string_trace(path: Path, length: int) -> Path:
    name = b"x" * length
    path.write_bytes(HEAD + b', {"ph": "X", "cat": "cpu_op", "name": "' + name + b'", "pid": 1, "tid": 1, "ts": 20, "dur": 1}' + TAIL)
    return path


@pytest.mark.parametrize("reader", ["auto", "python"])
def test_a_string_past_the_value_limit_stops_with_one_line(reader, tmp_path, private_tmp):
    trace = long_string_trace(tmp_path / "long.json", MAX_VALUE_BYTES + (4 << 20))
    started = time.monotonic()
    with PeakSize(private_tmp) as tmp_use, pytest.raises(InputError) as error:
        convert_files([trace], tmp_path / "out.duckdb", ConvertOptions(kineto_reader=reader))
    assert time.monotonic() - started < 60
    assert error.value.path == str(trace)
    assert error.value.problem.startswith("holds more than 64.0 MiB of JSON in one trace event")
    assert "\n" not in error.value.line()
    assert tmp_use.peak <= 2 * MAX_VALUE_BYTES + (16 << 20)  # the pieces before it, then the piece that cannot be cut
    assert list(private_tmp.iterdir()) == []
    result = runner.invoke(app, ["convert", str(trace), "-o", str(tmp_path / "cli.duckdb"), "-q"])
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1


def test_a_long_string_below_the_limit_converts_whole(tmp_path, private_tmp):
    trace = long_string_trace(tmp_path / "long.json", 3 << 20)
    raw = json.loads(trace.read_bytes())["traceEvents"]
    convert_files([trace], tmp_path / "out.duckdb", ConvertOptions())
    with duckdb.connect(str(tmp_path / "out.duckdb"), read_only=True) as con:
        names = sorted(len(n) for (n,) in con.execute("SELECT name FROM spans WHERE kind = 'op'").fetchall())
    assert names == sorted(len(e["name"]) for e in raw)
    assert list(private_tmp.iterdir()) == []


def many_threads_trace(path: Path, threads: int) -> Path:
    """Per thread: an outer op holding an inner op, and a thread_name metadata event."""
    with open(path, "w") as f:
        f.write('{"traceEvents": [\n')
        for i in range(threads):
            tid, ts = 1000 + i, 100 + i
            f.write(f'{{"ph": "X", "cat": "cpu_op", "name": "outer", "pid": 7, "tid": {tid}, "ts": {ts}, "dur": 10}},\n')
            f.write(f'{{"ph": "X", "cat": "cpu_op", "name": "inner", "pid": 7, "tid": {tid}, "ts": {ts + 2}, "dur": 5}},\n')
            f.write(f'{{"ph": "M", "name": "thread_name", "pid": 7, "tid": {tid}, "args": {{"name": "worker {i}"}}}}')
            f.write(",\n" if i < threads - 1 else "\n")
        f.write("]}\n")
    return path


def test_many_threads_convert_without_a_loop_per_thread(tmp_path, private_tmp, monkeypatch):
    """Scaled to 20,000 threads (docs/robustness.md has 10^6); every thread nested in one vectorised pass:
    the per-thread functions must not run for a single laminar thread."""
    calls = {"laminar": 0, "stack": 0}
    for name, key in (("_nest_laminar", "laminar"), ("_nest_stack", "stack")):
        original = getattr(nesting, name)

        def counted(*args, _original=original, _key=key):
            calls[_key] += 1
            return _original(*args)

        monkeypatch.setattr(nesting, name, counted)
    threads = 20_000
    trace = many_threads_trace(tmp_path / "threads.json", threads)
    raw = json.loads(trace.read_text())["traceEvents"]
    convert_files([trace], tmp_path / "out.duckdb", ConvertOptions())
    assert calls == {"laminar": 0, "stack": 0}
    with duckdb.connect(str(tmp_path / "out.duckdb"), read_only=True) as con:
        names = dict(con.execute("SELECT tid, name FROM threads").fetchall())
        pairs = con.execute(
            """SELECT c.tid, c.depth, p.name, p.tid, p.depth FROM spans c LEFT JOIN spans p ON p.span_id = c.parent_id
               WHERE c.name = 'inner'"""
        ).fetchall()
        outer_roots = con.execute("SELECT count(*) FROM spans WHERE name = 'outer' AND parent_id IS NULL AND depth = 0").fetchone()[0]
    assert names == {e["tid"]: e["args"]["name"] for e in raw if e["ph"] == "M"}
    assert len(pairs) == threads
    assert all(row[1:] == (1, "outer", row[0], 0) for row in pairs)  # inner: depth 1, under its own thread's outer
    assert outer_roots == threads
    assert list(private_tmp.iterdir()) == []


def test_bad_limit_values_get_one_line(tmp_path, private_tmp, monkeypatch):
    trace = KINETO_TRACES["kineto_cpu_only"]
    for args, env, expect in [
        (["--max-input-size", "lots"], None, "--max-input-size 'lots' is not a size"),
        (["--max-gzip-ratio", "-3"], None, "--max-gzip-ratio -3.0 is not a ratio"),
        ([], "ten", "XSP_MAX_GZIP_RATIO 'ten' is not a ratio"),
    ]:
        if env is not None:
            monkeypatch.setenv(input_limits.RATIO_ENV, env)
        result = runner.invoke(app, ["convert", str(trace), "-o", str(tmp_path / "out.duckdb"), "-q", *args])
        assert result.exit_code == 2, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and expect in lines[0], result.stderr
    monkeypatch.delenv(input_limits.RATIO_ENV)
    assert InputLimits.from_env(None, "1.5GB") == InputLimits(100, 1536 << 20)
    assert InputLimits.from_env(0, "0") == InputLimits(0, 0)
