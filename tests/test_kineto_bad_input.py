"""Bad Kineto input: exit code 2, one clear line naming the file and the problem, nothing written."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kineto_cases import KINETO_TRACES
from xsp_trace.cli import app

runner = CliRunner()
GOOD_EVENT = b'{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 10.5, "dur": 2}'


def convert_fails(source: Path, tmp_path: Path) -> str:
    out = tmp_path / "out" / "result.duckdb"
    out.parent.mkdir(exist_ok=True)
    before = hashlib.sha256(source.read_bytes()).hexdigest()
    result = runner.invoke(app, ["convert", str(source), "-o", str(out), "-q"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"xsp-trace: error: {source}: ")
    assert "Traceback" not in result.output
    assert list(out.parent.iterdir()) == []  # neither the database nor its temp file
    assert hashlib.sha256(source.read_bytes()).hexdigest() == before
    return lines[0]


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_truncated_gzip(tmp_path):
    data = KINETO_TRACES["kineto_nccl_collectives"].read_bytes()
    line = convert_fails(_write(tmp_path, "cut.json.gz", data[: len(data) // 2]), tmp_path)
    assert "truncated gzip" in line


def test_corrupt_gzip(tmp_path):
    data = bytearray(KINETO_TRACES["kineto_cuda_sync_alexnet"].read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = b"\x00" * 64
    line = convert_fails(_write(tmp_path, "corrupt.json.gz", bytes(data)), tmp_path)
    assert "gzip" in line


def test_truncated_plain_json(tmp_path):
    data = gzip.open(KINETO_TRACES["kineto_rocm_mi250"]).read()
    line = convert_fails(_write(tmp_path, "cut.json", data[: len(data) - 100]), tmp_path)
    assert "ends in the middle of the JSON" in line


def test_malformed_json(tmp_path):
    line = convert_fails(_write(tmp_path, "bad.json", b'{"traceEvents": [' + GOOD_EVENT + b",, ]}"), tmp_path)
    assert "is not valid JSON" in line and "near byte" in line


@pytest.mark.parametrize(
    "doc",
    [b'{"hello": "world"}', b'{"schemaVersion": 1, "deviceProperties": []}', b"[1, 2, 3]"],
    ids=["other_json", "missing_traceEvents", "list_of_numbers"],
)
def test_json_that_is_not_a_trace(doc, tmp_path):
    line = convert_fails(_write(tmp_path, "other.json", doc), tmp_path)
    assert "not a trace" in line or "no trace events" in line or "is not a JSON object" in line


def test_empty_trace_events(tmp_path):
    line = convert_fails(_write(tmp_path, "empty.json", b'{"schemaVersion": 1, "traceEvents": []}'), tmp_path)
    assert "empty traceEvents" in line


@pytest.mark.parametrize("missing", ["ts", "dur"])
def test_event_without_ts_or_dur(missing, tmp_path):
    event = GOOD_EVENT.replace(b', "ts": 10.5' if missing == "ts" else b', "dur": 2', b"")
    doc = b'{"traceEvents": [' + GOOD_EVENT + b", " + event + b"]}"
    line = convert_fails(_write(tmp_path, "nots.json", doc), tmp_path)
    assert f"event #2 ('aten::add') has no '{missing}'" in line


def test_non_utf8_name(tmp_path):
    doc = b'{"traceEvents": [' + GOOD_EVENT.replace(b"aten::add", b"aten::\xff\xfeadd") + b"]}"
    line = convert_fails(_write(tmp_path, "latin.json", doc), tmp_path)
    assert "not valid UTF-8" in line


def test_not_json_at_all(tmp_path):
    line = convert_fails(_write(tmp_path, "trace.json", b"{this is not json"), tmp_path)
    assert "is not valid JSON" in line
