"""The Kineto DuckDB reader maps the traceEvents array in pieces (kineto/pieces.py, kineto/duckdb_reader.py):
cuts fall only between top-level elements, whatever the strings hold and wherever the chunks
end, and a trace cut into many pieces converts to exactly the database of one piece (every
table), and to what the independent streaming reader gives; a file handed to the streaming reader
after pieces were mapped leaves nothing of them behind."""

from __future__ import annotations

import gzip
import json
import random
import tempfile
import threading
from pathlib import Path

import duckdb
import pytest

from xsp_trace.convert import ConvertOptions, convert_files
from xsp_trace.convert.kineto import duckdb_reader
from xsp_trace.convert.kineto import pieces as kineto_pieces
from xsp_trace.errors import InputError

pytestmark = pytest.mark.slow  # traces cut into many pieces

DATA = Path(__file__).parent / "data"
NASTY = ['"', "\\", "{", "}", "[", "]", ",", '"},{"ph":"X"', "],[", "\\\\", '\\"', "é", " ", "\n", "a"]


def cut(text: bytes, piece_bytes: int, chunk_sizes, lag: int = 0) -> list[bytes]:
    """The pieces PieceWriter makes of `text` (a JSON array, nothing after it) fed in chunks."""
    pieces: list[bytes] = []
    folder = Path(tempfile.mkdtemp())
    writer = kineto_pieces.PieceWriter(folder, piece_bytes, lag, lambda p: pieces.append(p.read_bytes()))
    pos = 0
    for size in chunk_sizes:
        if pos >= len(text):
            break
        writer.write(text[pos : pos + size])
        pos += size
    writer.write(text[pos:])
    writer.finish(0)
    return pieces


def assert_exact_cuts(text: bytes, pieces: list[bytes]) -> None:
    elements = json.loads(text)
    assert [e for p in pieces for e in json.loads(p)] == elements
    assert b",".join(p[1:-1] for p in pieces) == text[1:-1]  # cut at a comma, nothing lost


def random_value(rnd: random.Random, depth: int = 0):
    r = rnd.random()
    if depth > 3 or r < 0.35:
        return rnd.choice([1, -2.5, None, True, "".join(rnd.choice(NASTY) for _ in range(rnd.randint(0, 8)))])
    if r < 0.7:
        return {"".join(rnd.choice(NASTY) for _ in range(rnd.randint(0, 4))): random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))}
    return [random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]


def test_cuts_fall_between_top_level_elements_only():
    rnd = random.Random(12)
    pieces_made = 0
    for _ in range(400):
        text = json.dumps(
            [random_value(rnd) for _ in range(rnd.randint(1, 30))], indent=rnd.choice([None, 1]), ensure_ascii=rnd.random() < 0.5
        ).encode()
        pieces = cut(text, rnd.randint(1, 120), [rnd.randint(1, 40) for _ in range(len(text))])
        assert_exact_cuts(text, pieces)
        pieces_made += len(pieces)
    assert pieces_made > 2000  # the cases do cut


def test_a_piece_ends_wherever_its_size_is_reached_inside_strings_escapes_and_brackets():
    """Each byte of an event full of brackets, escaped quotes and backslashes in turn where the
    piece size is reached, with chunks of 1 and 3 bytes (so a chunk also ends inside an escape)."""
    event = {"name": 'k<{lambda()#1}>["x"]\\', "args": {"s": '\\"},{"ph": "X"}, [', "v": [[1, {"a": "]"}], []]}}
    text = json.dumps([event, event, {"ph": "i"}, event]).encode()
    for piece_bytes in range(1, len(text)):
        for chunk in (1, 3):
            pieces = cut(text, piece_bytes, [chunk] * len(text))
            assert len(pieces) >= 2 or piece_bytes > len(text) // 2
            assert_exact_cuts(text, pieces)


def test_no_cut_in_the_last_lag_bytes():
    text = json.dumps([{"a": i} for i in range(200)]).encode()
    pieces = cut(text, 10, [7] * len(text), lag=300)
    assert_exact_cuts(text, pieces)
    assert len(pieces[-1]) >= 300


def tables(path: Path) -> dict[str, list]:
    """Every table's rows (sorted), runs without its conversion time."""
    with duckdb.connect(str(path), read_only=True) as con:
        names = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' ORDER BY 1").fetchall()]
        out = {}
        for name in names:
            rows = con.execute(f'SELECT * EXCLUDE (converted_at) FROM "{name}"' if name == "runs" else f'SELECT * FROM "{name}"').fetchall()
            out[name] = sorted(rows, key=repr)
    return out


@pytest.fixture
def tiny_pieces(monkeypatch):
    """Pieces of 16 KiB read in chunks of 4 KiB (a tail of 4 KiB); yields the list of pieces made."""
    made: list[int] = []
    monkeypatch.setattr(duckdb_reader, "PIECE_BYTES", 16 << 10)
    monkeypatch.setattr(duckdb_reader, "CHUNK_BYTES", 4 << 10)
    monkeypatch.setattr(duckdb_reader, "TAIL_BYTES", 4 << 10)
    close = kineto_pieces.PieceWriter._close

    def counting_close(self):
        made.append(self.size)
        return close(self)

    monkeypatch.setattr(kineto_pieces.PieceWriter, "_close", counting_close)
    return made


def convert(source: Path, out: Path, reader: str = "auto") -> dict[str, list]:
    convert_files([source], out, ConvertOptions(kineto_reader=reader))
    return tables(out)


@pytest.mark.slow
@pytest.mark.parametrize("trace", ["kineto_cuda_sync_alexnet/hta_a100_alexnet.json.gz", "kineto_rocm_mi250/hta_mi250_rocm62_minitoy.json.gz"])
def test_a_real_trace_in_many_pieces_converts_as_in_one(trace, tmp_path, monkeypatch):
    source = DATA / trace
    whole = convert(source, tmp_path / "whole.duckdb")
    made: list[int] = []
    monkeypatch.setattr(duckdb_reader, "PIECE_BYTES", 4 << 10)
    monkeypatch.setattr(duckdb_reader, "CHUNK_BYTES", 1 << 10)
    monkeypatch.setattr(duckdb_reader, "TAIL_BYTES", 1 << 10)
    close = kineto_pieces.PieceWriter._close
    monkeypatch.setattr(kineto_pieces.PieceWriter, "_close", lambda self: made.append(self.size) or close(self))
    pieces = convert(source, tmp_path / "pieces.duckdb")
    assert len(made) >= 10, made
    assert sum(len(rows) for rows in whole.values()) > 1000
    for name in whole:
        assert pieces[name] == whole[name], name
    # The independent reader (ijson, whole relation): the same spans, names and arguments.
    python = convert(source, tmp_path / "python.duckdb", "python")
    for name in ("spans", "kernels", "memops", "span_args", "processes", "threads", "counters", "marks"):
        assert pieces[name] == python[name], name


def nasty_trace(path: Path, events: int = 400, tail: list | None = None) -> list[dict]:
    """CPU ops and kernels whose names and args are full of brackets, quotes and escapes."""
    rnd = random.Random(7)
    out = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "host ]},{"}}]
    for i in range(events):
        text = "".join(rnd.choice(NASTY) for _ in range(rnd.randint(0, 40)))
        out.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": f"op{i} {text}",
                "pid": 1,
                "tid": 2,
                "ts": 10 * i,
                "dur": 5,
                "args": {"note": text, "dims": [[i, 2], []]},
            }
        )
        if i % 3 == 0:
            out.append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": f"k{i}<{{lambda}}>{text}",
                    "pid": 0,
                    "tid": 7,
                    "ts": 10 * i + 1,
                    "dur": 2,
                    "args": {"correlation": i, "device": 0, "stream": 7},
                }
            )
    out += tail or []
    with gzip.open(path, "wt") as f:
        json.dump({"schemaVersion": 1, "traceEvents": out, "traceName": "t]"}, f)
    return out


def test_strings_full_of_brackets_across_pieces_keep_every_name(tmp_path, tiny_pieces):
    source = tmp_path / "nasty.json.gz"
    events = nasty_trace(source)
    pieces = convert(source, tmp_path / "pieces.duckdb")
    assert len(tiny_pieces) >= 5, tiny_pieces
    expected = sorted(e["name"] for e in events if e["ph"] == "X")
    with duckdb.connect(str(tmp_path / "pieces.duckdb"), read_only=True) as con:
        assert [r[0] for r in con.execute("SELECT name FROM spans ORDER BY name").fetchall()] == expected  # as json.loads reads them
        assert con.execute("SELECT name FROM processes WHERE pid = 1").fetchall() == [("host ]},{",)]
    python = convert(source, tmp_path / "python.duckdb", "python")
    for name in ("spans", "kernels", "span_args", "processes", "threads"):
        assert pieces[name] == python[name], name


@pytest.mark.parametrize(
    "late, expect",
    [
        ({"ph": "X", "cat": "cpu_op", "name": "late", "pid": 1, "tid": 2, "ts": 1, "dur": 1, "args": [1]}, None),  # args not an object: no args
        ({"ph": "X", "cat": "cpu_op", "name": "late", "pid": 1, "tid": 2, "ts": True, "dur": 1}, "has a non-numeric 'ts'"),
        (None, "is not a JSON object"),
        ({"ph": "X", "cat": "cpu_op", "name": "late", "pid": 1, "tid": 2, "dur": 1}, "has no 'ts'"),  # the piece's own check
    ],
)
def test_a_problem_in_a_late_piece(late, expect, tmp_path, tiny_pieces):
    """Pieces mapped before a late problem leave nothing behind: the streaming reader's result
    (all tables) or its error line, with the event's place in the whole trace."""
    source = tmp_path / "late.json.gz"
    events = nasty_trace(source, tail=[late])
    place = f"event #{len(events)}"
    outcomes = []
    for reader in ("auto", "python"):
        try:
            outcomes.append(("ok", convert(source, tmp_path / f"{reader}.duckdb", reader)))
        except InputError as exc:
            outcomes.append(("error", exc.problem))
    assert len(tiny_pieces) >= 5, tiny_pieces
    if expect is None:
        assert outcomes[0][0] == "ok" and outcomes[0] == outcomes[1]
    else:
        assert outcomes[0] == outcomes[1], outcomes
        assert outcomes[0][0] == "error" and place in outcomes[0][1] and expect in outcomes[0][1], outcomes


def test_a_caller_database_keeps_no_rows_of_a_run_that_failed_in_a_late_piece(tmp_path, tiny_pieces):
    from xsp_trace.convert import convert_into
    from xsp_trace.store.connection import duckdb_connect
    from xsp_trace.store.database import create_schema

    source = tmp_path / "late.json.gz"
    nasty_trace(source, tail=[{"ph": "X", "cat": "cpu_op", "name": "late", "pid": 1, "tid": 2, "dur": 1}])
    con = duckdb_connect(tmp_path / "open.duckdb")
    create_schema(con)
    with pytest.raises(InputError):
        convert_into(con, source, ConvertOptions())
    for table in ("kernels", "span_args", "marks", "counters", "memops"):
        assert con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table


def test_a_trailing_comma_cut_off_into_the_last_file_is_still_refused(tiny_pieces, tmp_path, monkeypatch):
    """`[event, big, big, big, <spaces> ]`: files of 8 KiB cut after each big event, the last cut at
    the trailing comma, so the last file is `[ ]`. Read alone (not with the file before it, in a
    piece of two) it has no event, the streaming reader judges the file and refuses it -- as it
    refuses the same text in one piece."""
    from typer.testing import CliRunner

    from xsp_trace.cli import app

    monkeypatch.setattr(duckdb_reader, "files_per_piece", lambda con: 2)
    event = {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 10.5, "dur": 2}
    bigs = ",\n".join(json.dumps({**event, "ts": 500 + i, "args": {"note": "x" * (20 << 10)}}) for i in range(3))
    # More spaces after the trailing comma than the tail (8 KiB): a cut may fall at that comma.
    trace = tmp_path / "trailing.json"
    trace.write_text('{"traceEvents": [' + json.dumps(event) + ",\n" + bigs + "," + " " * (12 << 10) + '], "traceName": "t"}')
    out = tmp_path / "out.duckdb"
    result = CliRunner().invoke(app, ["convert", str(trace), "-o", str(out), "-q"])
    assert result.exit_code == 2, result.output
    assert "is not valid JSON" in result.stderr and not out.exists()
    assert len(tiny_pieces) == 4  # event + big, big, big, and the empty last file


def test_a_problem_in_the_first_piece_stops_the_thread_writing_the_rest(tmp_path, tiny_pieces, monkeypatch):
    """The pieces are written by a second thread while this one maps: when DuckDB cannot read the
    first piece, that thread stops within a few files instead of decompressing the whole trace,
    and no decompressed file is left behind."""
    source = tmp_path / "early.json.gz"
    events = nasty_trace(source, events=3000)
    whole = len(tiny_pieces)
    convert(source, tmp_path / "whole.duckdb")
    whole = len(tiny_pieces) - whole
    assert whole >= 40, whole
    # An args object repeating a key: DuckDB's reader hands the file over once its first piece is mapped.
    bad = {"ph": "X", "cat": "cpu_op", "name": "early", "pid": 1, "tid": 2, "ts": 1, "dur": 1, "args": {"k": 1, "K": 2}}
    text = json.dumps({"schemaVersion": 1, "traceEvents": [events[0], bad, *events[1:]], "traceName": "t]"})
    with gzip.open(source, "wt") as f:
        f.write(text.replace('{"k": 1, "K": 2}', '{"k": 1, "k": 2}', 1))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    before = len(tiny_pieces)
    ours = convert(source, tmp_path / "early.duckdb")  # the streaming reader takes the file
    assert len(tiny_pieces) - before <= 4 * duckdb_reader.files_per_piece(duckdb.connect()) + 2
    assert ours == convert(source, tmp_path / "python.duckdb", "python")
    assert list(scratch.iterdir()) == []
    assert not [t for t in threading.enumerate() if t.name == "xsp-kineto-pieces"]
