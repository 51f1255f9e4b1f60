"""Fuzzed hand-edited databases (used by tests/support/fuzzing/__init__.py): a converted fixture whose rows are
edited without changing its schema, then read by every command that reads a database.

The edits (1-4 per seed, drawn by `edit_database`): rows of a random table deleted (some, or all),
a nullable column set to NULL, start and end swapped, times shifted, rows duplicated, numbers set
to extremes (0, -1, 2^62, the type's largest and smallest, NaN and infinity for doubles), text set
to '' or to another row's value. The schema check (xsp_trace/store/database.py check_schema) accepts every
such database: its tables, columns and types are unchanged.

Each case runs, in forked children: one analyze (every analysis as JSON; or the findings with a
what-if rule; or every analysis as CSV with --report), perfetto (half the time with
--critical-path), and diff against the unedited fixture (either side). Each must exit 0 or 2 (diff
also 1: a regression) within the time limit, without a traceback, with one error line naming the
database on exit 2, leave the database unchanged, nothing in $TMPDIR and no output when it failed.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import random
import shutil
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data"
# The fixtures edited, each converted once per work folder: GPU work and two steps (ROCm), CUDA
# syncs and events without steps, CPU only, an nsys export, and two ranks in one database.
BASES = {
    "gpu_steps": [DATA / "kineto_rocm_mi250" / "hta_mi250_rocm62_minitoy.json.gz"],
    "syncs": [DATA / "critical_path_hta" / "cuda_event_sync_multi_stream.json.gz"],
    "cpu_only": [DATA / "kineto_cpu_only" / "hta_cpu_only.json.gz"],
    "nsys": [DATA / "nsys_2026_mock_rtx3080" / "nsysai_mock_nsys2026.1.sqlite"],
    "two_runs": [DATA / "kineto_rocm_mi250" / "hta_mi250_rocm62_minitoy.json.gz", DATA / "critical_path_hta" / "cuda_event_sync.json.gz"],
}
TIMEOUT_S = 240.0  # per command: analyze of every analysis takes 15-100 s at nice 19 on a loaded 2-core machine
EDITS = ("delete", "delete", "null", "null", "swap", "shift", "duplicate", "extreme", "extreme", "text")
# Tables an edit may touch: every table but schema_info (a changed version row is refused on open, already tested).
SKIP_TABLES = ("schema_info",)
CORE_TABLES = ["spans"] * 4 + [
    "steps",
    "steps",
    "runs",
    "runs",
    "kernels",
    "memops",
    "launches",
    "span_ancestors",
    "attribution",
    "devices",
    "threads",
]
SMALL_INTS = [0, -1, 1, 2**31 - 1, -(2**31)]
BIG_INTS = [0, -1, 1, 2**62, -(2**62), 2**63 - 1, -(2**63)]
DOUBLES = ["0", "-1", "1e308", "-1e308", "'nan'", "'inf'", "'-inf'"]
TEXTS = ["''", "'x'", "'\n'", "'kernel'", "'\u00e9\u2603'", "repeat('a', 5000)"]


def base_database(work: Path, name: str, run_cli) -> Path:
    """The converted fixture `name` (made once per work folder, in a forked child: this process
    must not start DuckDB threads before it forks)."""
    base = work / "base"
    base.mkdir(parents=True, exist_ok=True)
    db = base / f"db_{name}.duckdb"
    with open(base / f".lock_{name}", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not db.exists():
            code, stderr = run_cli(["convert", *map(str, BASES[name]), "-o", str(db), "-q", "-j", "1"])
            if code != 0:
                raise RuntimeError(f"could not make the base database {name}: {stderr}")
    return db


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _edit(con, rng: random.Random, how: str) -> str:
    """Apply one edit of kind `how` with DuckDB connection `con`; returns what it did."""
    columns = con.execute(
        "SELECT table_name, column_name, data_type, is_nullable FROM duckdb_columns() "
        "WHERE schema_name = 'main' AND database_name = current_database() ORDER BY table_name, column_index"
    ).fetchall()
    columns = [c for c in columns if c[0] not in SKIP_TABLES]
    tables = sorted({c[0] for c in columns})
    # Mostly the tables every analysis reads (most of the others are empty in the fixtures).
    table = rng.choice(CORE_TABLES if rng.random() < 0.8 else tables)
    mine = [c for c in columns if c[0] == table]
    salt = rng.randrange(1 << 30)
    every = rng.choice([1, 2, 3, 10])  # the share of rows edited: all, 1/2, 1/3, 1/10
    some = f"hash(rowid + {salt}) % {every} = 0"
    t = _quoted(table)
    if how == "delete":
        con.execute(f"DELETE FROM {t} WHERE {some}")
        return f"delete 1/{every} {table}"
    if how == "duplicate":
        con.execute(f"INSERT INTO {t} SELECT * FROM {t} WHERE {some}")
        return f"duplicate 1/{every} {table}"
    if how == "null":
        nullable = [c for c in mine if c[3]]
        if not nullable:
            raise LookupError(table)
        column = rng.choice(nullable)[1]
        con.execute(f"UPDATE {t} SET {_quoted(column)} = NULL WHERE {some}")
        return f"null {table}.{column} 1/{every}"
    if how in ("swap", "shift"):
        times = [c[1] for c in mine if c[1].endswith("_ns") and c[2] == "BIGINT"]
        if how == "swap" and {"start_ns", "end_ns"} <= set(times):
            con.execute(f"UPDATE {t} SET start_ns = end_ns, end_ns = start_ns WHERE {some}")
            return f"swap {table} 1/{every}"
        if not times:
            raise LookupError(table)
        column = rng.choice(times)
        delta = rng.choice([-1, 1, -(10**9), 10**9, 10**15, -(10**15), 2**61])
        con.execute(f"UPDATE {t} SET {_quoted(column)} = {_quoted(column)} + {delta} WHERE {some}")
        return f"shift {table}.{column} {delta:+d} 1/{every}"
    if how == "extreme":
        numeric = [c for c in mine if c[2] in ("INTEGER", "BIGINT", "DOUBLE")]
        if not numeric:
            raise LookupError(table)
        _, column, kind, _ = rng.choice(numeric)
        value = str(rng.choice(SMALL_INTS if kind == "INTEGER" else BIG_INTS if kind == "BIGINT" else DOUBLES))
        con.execute(f"UPDATE {t} SET {_quoted(column)} = ({value})::{kind} WHERE {some}")
        return f"extreme {table}.{column} = {value} 1/{every}"
    text = [c for c in mine if c[2] == "VARCHAR"]
    if not text:
        raise LookupError(table)
    column = _quoted(rng.choice(text)[1])
    value = rng.choice(TEXTS + [f"(SELECT any_value({column}) FROM {t})"])
    con.execute(f"UPDATE {t} SET {column} = {value} WHERE {some}")
    return f"text {table}.{column} = {value[:20]} 1/{every}"


def edit_database(rng: random.Random, path: Path) -> list[str]:
    """Apply 1-4 seeded edits to the database at `path` (an edit a constraint refuses is drawn
    again); returns what was done. Call it in a forked child (it starts DuckDB)."""
    import duckdb

    done: list[str] = []
    with duckdb.connect(str(path)) as con:
        for _ in range(rng.randint(1, 4)):
            for _ in range(10):
                how = rng.choice(EDITS)
                try:
                    con.execute("BEGIN")
                    done.append(_edit(con, rng, how))
                    con.execute("COMMIT")
                    break
                except (duckdb.Error, LookupError):  # a key or NOT NULL constraint, an overflow, no such column
                    con.execute("ROLLBACK")
        con.execute("CHECKPOINT")
    return done


def _in_child(work, *args) -> str:
    """Run `work(*args)` in a forked child; its result (a list of strings) as lines, or the error."""
    import tempfile

    with tempfile.TemporaryFile() as out:
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                out.write("\n".join(work(*args)).encode())
            except BaseException as exc:  # noqa: BLE001 - reported to the parent
                out.write(f"failed: {exc!r}".encode())
                code = 1
            finally:
                out.flush()
                os._exit(code)
        os.waitpid(pid, 0)
        out.seek(0)
        return out.read().decode()


def commands(rng: random.Random, db: Path, base: Path, folder: Path) -> list[tuple[list[str], Path | None, tuple[int, ...]]]:
    """(arguments, the output it writes, the exit codes allowed) of each command run on `db`."""
    report = folder / "report.html"
    analyze = rng.choice(
        [
            (["--all", "--format", "json"], None),
            (
                ["--findings", "-a", "what_if", "--what-if", rng.choice(["kernel:.*=0", "op:.**0.5", "sync:.*=0", "gpu:.**2"]), "--format", "json"],
                None,
            ),
            (["--all", "--format", "csv", "--report", str(report)], report),
        ]
    )
    trace = folder / "out.pftrace"
    perfetto = ["perfetto", str(db), "-o", str(trace)] + (["--critical-path"] if rng.random() < 0.5 else [])
    pair = [str(base), str(db)] if rng.random() < 0.5 else [str(db), str(base)]
    return [
        (["analyze", str(db), *analyze[0]], analyze[1], (0, 2)),
        (perfetto, trace, (0, 2)),
        (["diff", *pair, "--format", rng.choice(["json", "table"])], None, (0, 1, 2)),
    ]


def run_database(seed: int, work: Path, folder: Path, tmpdir: Path):
    """One hand-edited database case: edit a copy of a base database, run each command, check."""
    from . import Outcome, exit_problems, run_child
    from .stores import run_cli_in_child, snapshot

    rng = random.Random(seed)
    name = rng.choice(sorted(BASES))
    base = base_database(work, name, run_cli_in_child)
    folder.mkdir(parents=True)
    tmpdir.mkdir()
    db = folder / "edited.duckdb"
    shutil.copyfile(base, db)
    edits = _in_child(edit_database, rng, db)
    outcome = Outcome(seed, f"db_{name}: {'; '.join(edits.splitlines())}", 0, 0.0)
    if edits.startswith("failed:"):
        outcome.problems.append(f"edit {edits}")
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    before = snapshot(folder)
    codes: list[int | None] = []
    for args, output, allowed in commands(rng, db, base, folder):
        code, seconds, stderr, _ = run_child(args, folder, tmpdir, None, TIMEOUT_S)
        codes.append(code)
        outcome.seconds += seconds
        outcome.stderr += f"$ {' '.join(args)}\n{stderr}"
        problems = exit_problems(code, stderr, db, allowed, what="database")
        if hashlib.sha256(db.read_bytes()).hexdigest() != digest:
            problems.append("input modified")
        if output is not None and output.exists() != (code == 0):
            problems.append("output written although it failed" if code else "half-written output (none)")
        left = sorted(set(snapshot(folder)) - set(before) - ({output.name} if output is not None and code == 0 else set()))
        if left or any(tmpdir.iterdir()):
            problems.append(f"leaked: {left + sorted(p.name for p in tmpdir.iterdir())}")
        outcome.problems += [f"{args[0]}: {p}" for p in problems]
        if output is not None:
            output.unlink(missing_ok=True)
    # The case's exit code: None if a command hung, else 2 if one refused the database, else 0 (diff's
    # 1, a regression, is an answer); each command's code is in the input's name.
    outcome.exit_code = None if None in codes else 2 if 2 in codes else 0
    outcome.input += f" [exits {'/'.join(str(c) for c in codes)}]"
    if not outcome.problems:
        shutil.rmtree(folder, ignore_errors=True)
        for suffix in (".stdout", ".stderr", ".verdict"):
            (work / f"{folder.name}{suffix}").unlink(missing_ok=True)
    else:
        (work / f"{folder.name}.log").write_text(outcome.stderr)
    shutil.rmtree(tmpdir, ignore_errors=True)
    return outcome
