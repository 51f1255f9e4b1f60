"""Whether a change keeps every output table identical: each input converted by two checkouts
(a fresh process each, importing that checkout's xsp_trace), then every table of the two databases
compared with EXCEPT ALL both ways (rows, with their counts). Columns that record when or where
the conversion ran (CONVERT_STAMPS) are left out of the comparison.

    python -m tools.same_outputs /work/main tests/data/kineto_*/*.json*
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

from bench.peers.children import python_script

# The child (python_script puts the checkout's xsp_trace first): the trace, the output.
CONVERT = """
import sys
from pathlib import Path
from xsp_trace.convert import ConvertOptions, convert_files
convert_files([Path(sys.argv[1])], Path(sys.argv[2]), ConvertOptions())
"""
CONVERT_STAMPS = {"converted_at", "source_path", "source", "path", "converter_version", "xsp_version"}


def convert(checkout: Path, trace: Path, out: Path) -> str | None:
    done = subprocess.run(python_script(CONVERT, trace.resolve(), out, checkout=checkout.resolve()), capture_output=True, text=True)
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["failed"])[-1]


def compare(a: Path, b: Path) -> list[str]:
    """Tables that differ (or exist in one only), each with the rows missing on either side."""
    con = duckdb.connect()
    con.execute(f"ATTACH '{a}' AS a (READ_ONLY); ATTACH '{b}' AS b (READ_ONLY)")
    tables = {
        db: {
            f'"{r[0]}"."{r[1]}"'
            for r in con.execute(f"SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = '{db}' AND NOT temporary").fetchall()
        }
        for db in ("a", "b")
    }
    problems = [f"{t}: only in one" for t in sorted(tables["a"] ^ tables["b"])]
    for table in sorted(tables["a"] & tables["b"]):
        columns = [r[0] for r in con.execute(f"SELECT column_name FROM (DESCRIBE a.{table})").fetchall() if r[0] not in CONVERT_STAMPS]
        cols = ", ".join(f'"{c}"' for c in columns)
        only_a = con.execute(f"SELECT count(*) FROM (SELECT {cols} FROM a.{table} EXCEPT ALL SELECT {cols} FROM b.{table})").fetchone()[0]
        only_b = con.execute(f"SELECT count(*) FROM (SELECT {cols} FROM b.{table} EXCEPT ALL SELECT {cols} FROM a.{table})").fetchone()[0]
        if only_a or only_b:
            problems.append(f"{table}: {only_a} rows only before, {only_b} only after")
    return problems


def main() -> None:
    base, traces = Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]
    here = Path(__file__).resolve().parent.parent
    same = 0
    with tempfile.TemporaryDirectory() as folder:
        for i, trace in enumerate(traces):
            a, b = Path(folder) / f"{i}.before.duckdb", Path(folder) / f"{i}.after.duckdb"
            errors = (convert(base, trace, a), convert(here, trace, b))
            if any(errors):
                print(f"{trace}: before {errors[0] or 'ok'}; after {errors[1] or 'ok'}" + (" (same)" if errors[0] == errors[1] else " DIFFERENT"))
                same += errors[0] == errors[1]
                continue
            problems = compare(a, b)
            print(f"{trace}: " + ("every table identical" if not problems else "; ".join(problems)), flush=True)
            same += not problems
    print(f"{same} of {len(traces)} inputs: identical outputs")
    sys.exit(0 if same == len(traces) else 1)


if __name__ == "__main__":
    main()
