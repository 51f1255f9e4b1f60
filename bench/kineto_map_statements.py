"""Seconds per statement of queries/ingest/kineto_map.sql over a Kineto trace, in the convert itself.

Runs the ordinary convert of the trace (DuckDB reader, pieces) with the mapping script run one
statement at a time (DuckDB's own statement split), and prints each statement's total over all
pieces, slowest first, with the rest of the convert as one line. The checkout to measure is the
one first on sys.path (`--checkout`, default this one), so a second checkout runs the same harness:

    python bench/kineto_map_statements.py 100M [--checkout /work/main] [--rounds 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", nargs="?", default="100M")
    parser.add_argument("--checkout", type=Path, default=BENCH.parent)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    sys.path.insert(0, str(BENCH))
    sys.path.insert(0, str(args.checkout))
    import xsp_trace.convert.kineto.converter as converter
    from convert_statements import statement_label
    from scaled_inputs import parse_size, scaled_kineto
    from xsp_trace.convert import ConvertOptions, convert_inputs
    from xsp_trace.resources import query_text

    path = scaled_kineto(parse_size(args.size))
    mapping = query_text("ingest/kineto_map")
    original = converter.run_script
    for round_number in range(args.rounds):
        seconds: dict[int, float] = {}
        labels: dict[int, str] = {}

        def timed_run_script(con, sql, run_id, _seconds=seconds, _labels=labels):
            if sql != mapping:
                return original(con, sql, run_id)
            con.execute(f"SET VARIABLE xsp_run_id = {int(run_id)}")
            for index, statement in enumerate(con.extract_statements(sql)):
                start = time.perf_counter()
                con.execute(statement)
                _seconds[index] = _seconds.get(index, 0.0) + time.perf_counter() - start
                _labels[index] = statement_label(statement.query)
            return None

        converter.run_script = timed_run_script
        with tempfile.TemporaryDirectory() as folder:
            start = time.perf_counter()
            convert_inputs([path], Path(folder) / "out.duckdb", ConvertOptions(), overwrite=True)
            total = time.perf_counter() - start
        mapped = sum(seconds.values())
        print(f"round {round_number + 1}: {path.name} via {args.checkout}: convert {total:.2f} s, kineto_map {mapped:.2f} s")
        print("| statement | seconds |\n| --- | ---: |")
        for index in sorted(seconds, key=lambda i: -seconds[i]):
            if seconds[index] >= 0.01:
                print(f"| {index}: `{labels[index]}` | {seconds[index]:.2f} |")


if __name__ == "__main__":
    main()
