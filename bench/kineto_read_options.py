"""How fast DuckDB's read_json fills the raw Kineto event relation, per choice of column types.

The trace's traceEvents array is cut once into pieces (kineto/duckdb_reader.extract_events, as
the convert does, one file per DuckDB thread per piece); then each variant reads every piece into
a temp table, in one process, in turn (each variant twice, the faster kept). Variants:

- args MAP: ts/dur DECIMAL(38,9), args MAP(VARCHAR, JSON) -- what the convert read first;
- args JSON: args as one JSON value -- what the convert reads now (the mapping extracts the keys);
- args JSON -> MAP: args read as JSON, cast to MAP(VARCHAR, JSON) in the same statement -- what the
  convert read before the mapping worked on JSON;
- times DOUBLE: ts/dur as DOUBLE (not exact: fractional microseconds lose ns), for scale;
- no args: args not read at all, the floor of the other columns.

    python bench/kineto_read_options.py 100M
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

from scaled_inputs import parse_size, scaled_kineto  # noqa: E402
from xsp_trace.convert.input_limits import MAX_VALUE_BYTES, InputLimits  # noqa: E402
from xsp_trace.convert.kineto.duckdb_reader import PIECE_BYTES, TAIL_BYTES, extract_events  # noqa: E402
from xsp_trace.convert.kineto.pieces import PieceWriter  # noqa: E402
from xsp_trace.store.connection import duckdb_connect, duckdb_threads  # noqa: E402

_BASE = "ph: 'VARCHAR', cat: 'VARCHAR', name: 'VARCHAR', pid: 'VARCHAR', tid: 'VARCHAR', id: 'VARCHAR'"
_EXACT = "ts: 'DECIMAL(38,9)', dur: 'DECIMAL(38,9)'"
VARIANTS = {
    "args MAP(VARCHAR, JSON) (the first reader)": (f"{{{_BASE}, {_EXACT}, args: 'MAP(VARCHAR, JSON)'}}", "*"),
    "args JSON (the reader now)": (f"{{{_BASE}, {_EXACT}, args: 'JSON'}}", "*"),
    "args JSON, cast to MAP(VARCHAR, JSON) (the reader before)": (
        f"{{{_BASE}, {_EXACT}, args: 'JSON'}}",
        "* REPLACE (CAST(args AS MAP(VARCHAR, JSON)) AS args)",
    ),
    "times DOUBLE, args JSON (not exact)": (f"{{{_BASE}, ts: 'DOUBLE', dur: 'DOUBLE', args: 'JSON'}}", "*"),
    "no args (floor)": (f"{{{_BASE}, {_EXACT}}}", "*"),
}


def main() -> None:
    size = parse_size(sys.argv[1] if len(sys.argv) > 1 else "100M")
    path = scaled_kineto(size)
    con = duckdb_connect()
    files: list[Path] = []
    with tempfile.TemporaryDirectory() as folder:
        t0 = time.perf_counter()
        writer = PieceWriter(Path(folder), max(1, PIECE_BYTES // duckdb_threads(con)), 2 * TAIL_BYTES, files.append)
        assert extract_events(path, writer, InputLimits()) is not None
        print(f"{path.name}: cut into {len(files)} files in {time.perf_counter() - t0:.1f} s; {duckdb_threads(con)} DuckDB threads")
        threads = duckdb_threads(con)
        pieces = [files[i : i + threads] for i in range(0, len(files), threads)]
        print("| variant | seconds (best of 2) | rows |")
        print("| --- | ---: | ---: |")
        for label, (columns, select) in VARIANTS.items():
            best = None
            for _ in range(2):
                t0 = time.perf_counter()
                rows = 0
                for piece in pieces:
                    con.execute(
                        f"CREATE OR REPLACE TEMP TABLE _probe AS SELECT {select} FROM read_json(?, format = 'array', "
                        f"maximum_object_size = {MAX_VALUE_BYTES}, columns = {columns})",
                        [[str(f) for f in piece]],
                    )
                    rows += con.execute("SELECT count(*) FROM _probe").fetchone()[0]
                seconds = time.perf_counter() - t0
                best = seconds if best is None else min(best, seconds)
            print(f"| {label} | {best:.2f} | {rows:,} |", flush=True)


if __name__ == "__main__":
    main()
