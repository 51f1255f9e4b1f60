"""Seeded mutation fuzzing of `xsp-trace convert` on the real fixtures, and of the reading commands on
mutated dataset markers and SQL strings (tests/support/fuzzing/stores.py); used by tests/test_fuzz.py and
tests/support/fuzz_long.py. It lives under bench/ so that bench never imports tests/; pytest puts bench/ on
its path (pyproject.toml) for the tests.

`make_input(seed, folder)` writes one mutated input, drawn from the real small fixtures: byte
flips, truncation (of the JSON text or of the gzip stream), JSON field deletion and type change,
numbers out of range, non-finite numbers (NaN, Infinity, -inf) in times and args, SQLite table and column drops, NULL/text/blob/huge values in numeric
columns, duplicated string ids. `run_one` converts it in a forked child (the parent imported
xsp-trace once, so an input costs the conversion, not the interpreter start) under a time limit
and checks what the user would see: exit 0 or 2, no traceback, one error line, nothing left in
the folder or in $TMPDIR, the input unchanged, and no half-written output (exit 2: no output;
exit 0: a database with exactly one run).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import random
import shutil
import signal
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data"  # the real fixtures it mutates
KINETO_SOURCES = [
    DATA / "kineto_cpu_only" / "hta_cpu_only.json.gz",
    DATA / "kineto_2021_format" / "hta_2021_format_inference.json.gz",
    DATA / "kineto_triton_cuda_driver" / "hta_a100_triton.json.gz",
    DATA / "kineto_rocm_mi250" / "hta_mi250_rocm62_minitoy.json.gz",
    DATA / "kineto_hip_graphs_mi300x_vllm" / "tracelens_mi300x_vllm_full_graph_decode.json.gz",
]
NSYS_SOURCES = [DATA / "nsys_2026_mock_rtx3080" / "nsysai_mock_nsys2026.1.sqlite"]
TIMEOUT_S = 30.0
_TEXT_CACHE: dict[Path, bytes] = {}

ODD_VALUES = [
    None,
    True,
    False,
    "x",
    "--5",
    "12",
    "",
    -1,
    0,
    10**30,
    -(10**30),
    1.5,
    1e300,
    [],
    {},
    [1, 2],
    {"a": 1},
    "\u00e9\u2603",
    2**63,
    -(2**63) - 1,
    9.999e18,
]
SQL_ODD_VALUES = [None, "abc", b"\x00\xff", 1.5, 1e30, -1, 2**63 - 1, -(2**63), "--5", ""]


def _text(path: Path) -> bytes:
    if path not in _TEXT_CACHE:
        _TEXT_CACHE[path] = gzip.open(path).read()
    return _TEXT_CACHE[path]


# -- Kineto mutations -----------------------------------------------------------------------------


def _flip_bytes(rng: random.Random, data: bytes, count: int) -> bytes:
    buf = bytearray(data)
    for _ in range(count):
        i = rng.randrange(len(buf))
        buf[i] = rng.randrange(256)
    return bytes(buf)


def _mutate_events(rng: random.Random, doc, how: str):
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list) or not events:
        return doc
    for _ in range(rng.randint(1, 4)):
        event = events[rng.randrange(len(events))]
        if not isinstance(event, dict) or not event:
            continue
        if how == "delete":
            del event[rng.choice(list(event))]
        elif how == "type":
            key = rng.choice(list(event) + ["ts", "dur", "pid", "tid", "ph", "cat", "args", "id"])
            event[key] = rng.choice(ODD_VALUES)
        elif how == "args" and isinstance(event.get("args"), dict) and event["args"]:
            event["args"][rng.choice(list(event["args"]))] = rng.choice(ODD_VALUES)
        elif how == "range":
            event[rng.choice(["ts", "dur"])] = rng.choice([10**25, -(10**25), 9223372036854775, 2**64, 1e19])
        elif how == "nonfinite":  # json.dumps writes NaN, Infinity, -Infinity; _kineto_input respells some
            key = rng.choice(["ts", "dur", "pid", "name", "args", "args"])
            value = rng.choice([math.nan, math.inf, -math.inf, [1, math.nan]])
            if key == "args" and isinstance(event.get("args"), dict) and event["args"]:
                event["args"][rng.choice(list(event["args"]))] = value
            else:
                event[key] = value
    if how == "meta" and isinstance(doc, dict):
        doc[rng.choice(["baseTimeNanoseconds", "deviceProperties", "distributedInfo", "schemaVersion", "traceEvents"])] = rng.choice(ODD_VALUES)
    return doc


def _kineto_input(rng: random.Random, folder: Path) -> Path:
    source = rng.choice(KINETO_SOURCES)
    text = _text(source)
    how = rng.choice(["flip", "truncate", "gz_flip", "gz_truncate", "delete", "type", "args", "range", "meta", "utf8", "nonfinite"])
    if how == "flip":
        data = _flip_bytes(rng, text, rng.randint(1, 8))
    elif how == "truncate":
        data = text[: rng.randrange(len(text))]
    elif how == "utf8":
        i = rng.randrange(len(text))
        data = text[:i] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"]) + text[i:]
    elif how in ("gz_flip", "gz_truncate"):
        packed = gzip.compress(text, mtime=0)
        data = _flip_bytes(rng, packed, rng.randint(1, 4)) if how == "gz_flip" else packed[: rng.randrange(len(packed))]
        path = folder / f"k_{how}.json.gz"
        path.write_bytes(data)
        return path
    else:
        doc = _mutate_events(rng, json.loads(text), how)
        data = json.dumps(doc).encode()
        if how == "nonfinite":  # other spellings DuckDB's JSON reader takes (Kineto once wrote inf)
            data = data.replace(b"-Infinity", rng.choice([b"-Infinity", b"-inf"])).replace(b"NaN", rng.choice([b"NaN", b"nan", b"-NaN"]))
    gz = rng.random() < 0.5
    path = folder / f"k_{how}.json{'.gz' if gz else ''}"
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return path


# -- nsys mutations ---------------------------------------------------------------------------------


def _tables(con: sqlite3.Connection) -> list[str]:
    return [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]


def _numeric_columns(con: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in con.execute(f'PRAGMA table_info("{table}")') if r[2].upper() in ("INTEGER", "INT", "REAL", "NUMERIC")]


def _nsys_input(rng: random.Random, folder: Path) -> Path:
    source = rng.choice(NSYS_SOURCES)
    path = folder / "n.sqlite"
    shutil.copyfile(source, path)
    how = rng.choice(["drop_table", "drop_column", "values", "values", "values", "dup_strings", "end_before_start", "flip", "truncate", "empty_v2"])
    if how in ("flip", "truncate"):
        data = path.read_bytes()
        data = _flip_bytes(rng, data, rng.randint(1, 16)) if how == "flip" else data[: rng.randrange(len(data))]
        path.write_bytes(data)
        return path
    con = sqlite3.connect(path)
    try:
        for _ in range(5):  # a mutation the table's constraints refuse is replaced by another draw
            try:
                _mutate_sqlite(rng, con, how)
                break
            except sqlite3.Error:
                con.rollback()
                how = rng.choice(["drop_table", "drop_column", "values"])
        con.commit()
    finally:
        con.close()
    return path


def _mutate_sqlite(rng: random.Random, con: sqlite3.Connection, how: str) -> None:
    if True:  # (kept indented: one block per mutation below)
        important = [t for t in _tables(con) if t.startswith(("CUPTI", "NVTX", "StringIds", "TARGET", "ThreadNames", "ENUM"))]
        table = rng.choice(important)
        if how == "drop_table":
            con.execute(f'DROP TABLE "{table}"')
        elif how == "drop_column":
            columns = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
            keep = [c for c in columns if c != rng.choice(columns)] or columns[:1]
            cols = ", ".join(f'"{c}"' for c in keep)
            con.execute(f'CREATE TABLE "_x" AS SELECT {cols} FROM "{table}"')
            con.execute(f'DROP TABLE "{table}"')
            con.execute(f'ALTER TABLE "_x" RENAME TO "{table}"')
        elif how == "values":
            columns = _numeric_columns(con, table) or [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
            column = rng.choice(columns)
            value = rng.choice(SQL_ODD_VALUES)
            con.execute(
                f'UPDATE "{table}" SET "{column}" = ? WHERE rowid IN (SELECT rowid FROM "{table}" ORDER BY random() LIMIT ?)',
                [value, rng.randint(1, 20)],
            )
        elif how == "dup_strings":
            _without_primary_key(con)
            con.execute("INSERT INTO StringIds (id, value) SELECT id, value || '#dup' FROM StringIds ORDER BY random() LIMIT ?", [rng.randint(1, 50)])
        elif how == "end_before_start":
            target = rng.choice([t for t in _tables(con) if t.startswith("CUPTI") or t == "NVTX_EVENTS"])
            con.execute(
                f'UPDATE "{target}" SET "end" = start - ? WHERE rowid IN (SELECT rowid FROM "{target}" ORDER BY random() LIMIT ?)',
                [rng.randint(1, 10**6), rng.randint(1, 5)],
            )
        elif how == "empty_v2":
            target = rng.choice([t for t in _tables(con) if t.startswith("CUPTI")])
            con.execute(f'CREATE TABLE "{target}_V2" AS SELECT * FROM "{target}" WHERE 0')


def _without_primary_key(con: sqlite3.Connection) -> None:
    """StringIds.id is the primary key in real exports; rebuild it without one so duplicates fit."""
    con.execute("CREATE TABLE _s AS SELECT id, value FROM StringIds")
    con.execute("DROP TABLE StringIds")
    con.execute("ALTER TABLE _s RENAME TO StringIds")


INPUT_KINDS = ("convert", "marker", "sql", "database")


def input_kind(seed: int) -> str:
    """What seed `seed` fuzzes: a hand-edited database read by analyze, perfetto and diff (20 %), else
    a trace for convert (60 % of the rest), a dataset marker or an SQL string (20 % each). The
    database draw is a second one, so every other seed fuzzes what it did before databases were added."""
    if random.Random(f"database:{seed}").random() < 0.2:
        return "database"
    draw = random.Random(f"kind:{seed}").random()
    return "convert" if draw < 0.6 else "marker" if draw < 0.8 else "sql"


def make_input(seed: int, folder: Path) -> Path:
    """One mutated input in `folder` (which must be empty), determined by `seed`."""
    rng = random.Random(seed)
    return _nsys_input(rng, folder) if rng.random() < 0.4 else _kineto_input(rng, folder)


# -- running and checking --------------------------------------------------------------------------


@dataclass
class Outcome:
    seed: int
    input: str
    exit_code: int | None  # None: killed after TIMEOUT_S
    seconds: float
    problems: list[str] = field(default_factory=list)
    stderr: str = ""


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _child(args: list[str], folder: Path, tmpdir: Path, output: Path | None) -> None:
    """In the forked child: run the CLI as the console script would, then check the output it left."""
    import tempfile

    out = os.open(folder.parent / f"{folder.name}.stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(folder.parent / f"{folder.name}.stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(out, 1)
    os.dup2(err, 2)
    sys.stdout = open(1, "w", closefd=False)  # not a test runner's capture object: the real fds
    sys.stderr = open(2, "w", closefd=False)
    os.environ["TMPDIR"] = str(tmpdir)
    tempfile.tempdir = str(tmpdir)
    sys.argv = ["xsp-trace", *args]
    code = 1
    try:
        from xsp_trace.cli import main

        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - a traceback is what the fuzzer looks for
        import traceback

        traceback.print_exc()
        code = 1
    verdict = ""
    if output is not None and output.exists():
        try:
            import duckdb

            with duckdb.connect(str(output), read_only=True) as con:
                verdict = str(con.execute("SELECT count(*) FROM runs").fetchone()[0])
        except BaseException as exc:  # noqa: BLE001
            verdict = f"unreadable: {type(exc).__name__}"
    (folder.parent / f"{folder.name}.verdict").write_text(verdict)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def exit_problems(code: int | None, stderr: str, named: Path, allowed: tuple[int, ...] = (0, 2), what: str = "input") -> list[str]:
    """What is wrong with how a child ended: a hang (code None), an exit code not in `allowed`, a
    traceback, or an error that is not one line naming `named`."""
    problems = []
    if code is None:
        problems.append("hang")
    elif code not in allowed:
        problems.append(f"exit {code}")
    if "Traceback" in stderr:
        problems.append("traceback")
    errors = [line for line in stderr.splitlines() if line.startswith("xsp-trace: error:")]
    if code == 2 and (len(errors) != 1 or str(named) not in errors[0]):
        problems.append(f"not one error line naming the {what}")
    return problems


def run_child(
    args: list[str], folder: Path, tmpdir: Path, output: Path | None, timeout_s: float = TIMEOUT_S
) -> tuple[int | None, float, str, str | None]:
    """Run the CLI with `args` in a forked child killed after `timeout_s`: (exit code or None when
    killed, seconds, its stderr, the verdict on `output`). Its stdout and stderr are files beside `folder`."""
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(args, folder, tmpdir, output)
    code = None
    deadline = start + timeout_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            break
        time.sleep(0.01)
    if code is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    seconds = time.monotonic() - start
    stderr = (folder.parent / f"{folder.name}.stderr").read_text(errors="replace")
    verdict_file = folder.parent / f"{folder.name}.verdict"
    verdict = verdict_file.read_text() if verdict_file.exists() else None
    return code, seconds, stderr, verdict


def run_one(seed: int, work: Path) -> Outcome:
    """Make input `seed` in a fresh folder under `work`, run its command in a forked child, check everything."""
    from .stores import base_stores, marker_input, run_cli_in_child, snapshot, sql_input

    folder = work / f"case{seed}"
    tmpdir = work / f"tmp{seed}"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(tmpdir, ignore_errors=True)
    kind = input_kind(seed)
    if kind == "database":
        from .databases import run_database

        return run_database(seed, work, folder, tmpdir)
    if kind != "convert":
        db, ds = base_stores(work, run_cli_in_child)
    folder.mkdir(parents=True)
    tmpdir.mkdir()
    output: Path | None = None
    if kind == "convert":
        source = make_input(seed, folder)
        name = source.name
        output = folder / "out.duckdb"
        args = ["convert", str(source), "-o", str(output), "-q"]
    elif kind == "marker":
        name, source, args = marker_input(random.Random(seed), folder, ds)
    else:
        name, source, args = sql_input(random.Random(seed), folder, db, ds)
    before = _digest(source) if kind == "convert" else snapshot(folder)
    code, seconds, stderr, verdict = run_child(args, folder, tmpdir, output)
    outcome = Outcome(seed, name, code, seconds, stderr=stderr)
    problems = outcome.problems
    problems += exit_problems(code, stderr, source)
    if kind == "convert":
        if _digest(source) != before:
            problems.append("input modified")
        left = sorted(p.name for p in folder.iterdir() if p not in (source, output))
    else:
        after = snapshot(folder)
        if any(after.get(k) != v for k, v in before.items()):
            problems.append("input modified")
        left = sorted(set(after) - set(before))
    if left or any(tmpdir.iterdir()):
        problems.append(f"leaked: {left + sorted(p.name for p in tmpdir.iterdir())}")
    if kind == "convert" and code == 2 and output is not None and output.exists():
        problems.append("output written although it failed")
    if kind == "convert" and code == 0 and verdict != "1":
        problems.append(f"half-written output ({verdict!r})")
    if not problems:
        shutil.rmtree(folder, ignore_errors=True)
        for suffix in (".stdout", ".stderr", ".verdict"):
            (work / f"{folder.name}{suffix}").unlink(missing_ok=True)
    shutil.rmtree(tmpdir, ignore_errors=True)
    return outcome


def run_many(seeds, work: Path, jobs: int = 1, on_outcome=None) -> list[Outcome]:
    """run_one for every seed, `jobs` at a time (each in its own forked process: the checks fork again)."""
    import multiprocessing

    work.mkdir(parents=True, exist_ok=True)
    outcomes: list[Outcome] = []
    if jobs <= 1:
        for seed in seeds:
            outcomes.append(run_one(seed, work))
            if on_outcome:
                on_outcome(outcomes[-1])
        return outcomes
    with multiprocessing.get_context("fork").Pool(jobs, maxtasksperchild=50) as pool:
        for outcome in pool.imap_unordered(_run_in_pool, [(seed, work) for seed in seeds]):
            outcomes.append(outcome)
            if on_outcome:
                on_outcome(outcome)
    return outcomes


def _run_in_pool(item) -> Outcome:
    seed, work = item
    return run_one(seed, work)


def preload() -> None:
    """Import what a conversion imports, once, before forking children."""
    import duckdb  # noqa: F401
    import pyarrow  # noqa: F401

    import xsp_trace.analyze  # noqa: F401
    import xsp_trace.cli  # noqa: F401
    import xsp_trace.convert.correlate  # noqa: F401
    import xsp_trace.convert.kineto  # noqa: F401
    import xsp_trace.convert.kineto.duckdb_reader  # noqa: F401
    import xsp_trace.convert.nsys  # noqa: F401
    import xsp_trace.sandbox  # noqa: F401
