"""Fuzzed inputs for the reading commands (used by tests/support/fuzzing/__init__.py): Parquet dataset markers and SQL.

- Marker: a copy of a real dataset (converted once per work folder from a real trace) whose
  xsp_dataset.json is mutated -- a table listed twice, unknown names, keys removed or given odd
  values (null, numbers, strings, nested lists), sizes changed, files added or dropped, bytes
  flipped, truncated -- then read by `query` or `analyze`.
- SQL: a statement of the SQL corpus (tests/data/query_sql_corpus/statements.tsv), mutated --
  spliced with another, wrapped in EXPLAIN [ANALYZE] / PREPARE ... EXECUTE, tokens swapped between
  statements, truncated, comments inserted -- run by `query` on a copy of the database or dataset.

The checks are tests/support/fuzzing/__init__.py's: exit 0 or 2, no traceback, one line naming the data on exit 2,
every file of the case folder unchanged (nothing written, replaced or deleted), $TMPDIR empty.
"""

from __future__ import annotations

import csv
import fcntl
import hashlib
import json
import os
import random
import re
import shutil
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data"
BASE_TRACE = DATA / "kineto_rocm_mi250" / "hta_mi250_rocm62_minitoy.json.gz"
CORPUS = DATA / "query_sql_corpus" / "statements.tsv"
MARKER = "xsp_dataset.json"
ODD = [None, True, 0, -1, 5, 1.5, 2**64, "", "x", "spans", [], {}, [1, [2, [3]]], {"a": None}, "\n", "runs\u2028"]


def corpus() -> list[str]:
    with open(CORPUS, encoding="utf-8") as f:
        rows = csv.reader((line for line in f if line.strip() and not line.startswith("#")), delimiter="\t", quoting=csv.QUOTE_NONE)
        return [r[2] for r in rows]


def base_stores(work: Path, run_cli) -> tuple[Path, Path]:
    """The real database and dataset every marker and SQL input starts from, made once per work
    folder (in forked children: this process must not start DuckDB threads before it forks)."""
    base = work / "base"
    db, ds = base / "base.duckdb", base / "ds"
    base.mkdir(parents=True, exist_ok=True)
    with open(base / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (db.exists() and (ds / MARKER).exists()):
            shutil.rmtree(ds, ignore_errors=True)
            for args in (
                ["convert", str(BASE_TRACE), "-o", str(db), "-q", "--overwrite"],
                ["convert", str(BASE_TRACE), "-o", str(ds), "--format", "parquet", "-j", "1", "-q"],
            ):
                code, stderr = run_cli(args)
                if code != 0:
                    raise RuntimeError(f"could not make the base store: {stderr}")
    return db, ds


def _flip(rng: random.Random, data: bytes, count: int) -> bytes:
    buf = bytearray(data)
    for _ in range(count):
        buf[rng.randrange(len(buf))] = rng.randrange(256)
    return bytes(buf)


def _mutate_marker(rng: random.Random, text: str) -> tuple[str, bytes]:
    how = rng.choice(["twice", "unknown", "drop_key", "odd_value", "odd_table", "size", "add_file", "drop_file", "flip", "truncate", "deep", "many"])
    if how == "flip":
        return how, _flip(rng, text.encode(), rng.randint(1, 6))
    if how == "truncate":
        return how, text.encode()[: rng.randrange(len(text))]
    if how == "deep":
        depth = rng.choice([100, 1000, 10_000])
        return how, text.replace('"tables": [', '"tables": [' + "[" * depth + "]" * depth + ", ", 1).encode()
    marker = json.loads(text)
    for _ in range(rng.randint(1, 3) if how == "many" else 1):
        step = how if how != "many" else rng.choice(["twice", "unknown", "drop_key", "odd_value", "odd_table", "size", "add_file", "drop_file"])
        files = marker.get("files") if isinstance(marker.get("files"), dict) else {}
        tables = marker.get("tables") if isinstance(marker.get("tables"), list) else []
        if step == "twice" and tables:
            tables.append(rng.choice(tables))
        elif step == "unknown":
            tables.append(rng.choice(["secrets", "../spans", "spans/run_id=1", "", "SPANS", "schema_info\n"]))
        elif step == "drop_key" and marker:
            marker.pop(rng.choice(list(marker)))
        elif step == "odd_value":
            marker[rng.choice(["format", "schema_version", "tables", "files"])] = rng.choice(ODD)
        elif step == "odd_table" and tables:
            tables[rng.randrange(len(tables))] = rng.choice(ODD)
        elif step == "size" and files:
            name = rng.choice(list(files))
            files[name] = rng.choice([0, 1, files[name] + 1, -5, "12", None, 1.0, 2**70])
        elif step == "add_file":
            files[rng.choice(["spans/run_id=9/x.parquet", "../x.parquet", "/etc/passwd", "nope.parquet"])] = rng.randint(0, 99)
        elif step == "drop_file" and files:
            files.pop(rng.choice(list(files)))
    return how, json.dumps(marker).encode()


def marker_input(rng: random.Random, folder: Path, base_ds: Path) -> tuple[str, Path, list[str]]:
    """(what, the dataset folder, the command's arguments) for one mutated marker."""
    ds = folder / "ds"
    shutil.copytree(base_ds, ds)
    how, data = _mutate_marker(rng, (base_ds / MARKER).read_text())
    (ds / MARKER).write_bytes(data)
    if rng.random() < 0.3:
        return f"marker_{how}", ds, ["analyze", str(ds), "-a", "kernel_info", "--format", "csv"]
    return f"marker_{how}", ds, ["query", str(ds), "SELECT kind, count(*) FROM spans GROUP BY kind", "--timeout", "20"]


_TOKEN = re.compile(r"\s+|[(),;]|'[^']*'|\"[^\"]*\"|[^\s(),;]+")


def _mutate_sql(rng: random.Random, statements: list[str]) -> tuple[str, str]:
    sql = rng.choice(statements)
    how = rng.choice(["splice", "wrap", "swap", "truncate", "comment", "case", "plain"])
    if how == "splice":
        sql = f"{sql}; {rng.choice(statements)}"
    elif how == "wrap":
        sql = rng.choice(
            ["EXPLAIN {}", "EXPLAIN ANALYZE {}", "PREPARE p AS {}; EXECUTE p", "SELECT * FROM ({})", "WITH x AS ({}) SELECT 1", "{} LIMIT 3"]
        ).format(sql)
    elif how == "swap":
        mine, other = _TOKEN.findall(sql), _TOKEN.findall(rng.choice(statements))
        if mine and other:
            mine[rng.randrange(len(mine))] = rng.choice(other)
        sql = "".join(mine)
    elif how == "truncate":
        sql = sql[: rng.randrange(len(sql) + 1)]
    elif how == "comment":
        at = rng.randrange(len(sql) + 1)
        sql = sql[:at] + rng.choice([" /* x */ ", " -- x\n", "/**/", "\n"]) + sql[at:]
    elif how == "case":
        sql = "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in sql)
    return how, sql


def sql_input(rng: random.Random, folder: Path, base_db: Path, base_ds: Path) -> tuple[str, Path, list[str]]:
    """(what, the data queried, the command's arguments) for one mutated corpus statement."""
    db, ds, out = folder / "data.duckdb", folder / "ds", folder / "outside"
    shutil.copyfile(base_db, db)
    shutil.copytree(base_ds, ds)
    out.mkdir()
    how, template = _mutate_sql(rng, corpus())
    sql = template.replace("{out}", str(out)).replace("{ds}", str(ds)).replace("{db}", str(db))
    target = db if rng.random() < 0.5 else ds
    return f"sql_{how}", target, ["query", str(target), sql, "--timeout", "20", "--limit", "20"]


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under `folder` with its digest: what a read-only command must leave unchanged."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir" for p in sorted(folder.rglob("*"))}


def run_cli_in_child(args: list[str]) -> tuple[int, str]:
    """Run the CLI in a forked child (for the base stores); (exit code, stderr)."""
    import tempfile

    with tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:
            os.dup2(err.fileno(), 2)
            sys.argv = ["xsp-trace", *args]
            code = 1
            try:
                from xsp_trace.cli import main

                main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        err.seek(0)
        return os.waitstatus_to_exitcode(status), err.read().decode(errors="replace")
