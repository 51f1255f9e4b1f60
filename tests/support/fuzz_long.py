"""The long fuzzing run (from the checkout's top, which it imports xsp_trace from): tests/support/fuzzing/ over N seeds (traces for convert, dataset markers, SQL for
query, hand-edited databases for analyze/perfetto/diff), counts for docs/robustness.md.

    nice python -m tests.support.fuzz_long --inputs 10000 --start 0 --jobs 1 --work /tmp/xsp-fuzz --log fuzz.jsonl
    nice python -m tests.support.fuzz_long --inputs 1000 --kinds database --log fuzz_db.jsonl  # only the database seeds of 0-999 (~200)

Resumable: seeds already in --log are skipped, so a run can be split across time. Prints the
counts (inputs, exit 0, exit 2, tracebacks, hangs, leaks, modified inputs, half-written outputs,
other problems) and the rate; failing cases stay under --work for inspection.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from .fuzzing import INPUT_KINDS, input_kind, preload, run_many


def summarize(records: list[dict]) -> dict:
    count = lambda pred: sum(1 for r in records if pred(r))  # noqa: E731
    has = lambda word: count(lambda r: any(word in p for p in r["problems"]))  # noqa: E731
    return {
        "inputs": len(records),
        "exit_0": count(lambda r: r["exit_code"] == 0),
        "exit_2": count(lambda r: r["exit_code"] == 2),
        "tracebacks": has("traceback"),
        "hangs": has("hang"),
        "leaked_temp_files": has("leaked"),
        "modified_inputs": has("input modified"),
        "half_written_outputs": has("half-written") + has("output written although"),
        "other_problems": count(lambda r: r["problems"])
        - count(
            lambda r: any(
                w in p for p in r["problems"] for w in ("traceback", "hang", "leaked", "input modified", "half-written", "output written although")
            )
        ),
        "seconds": round(sum(r["seconds"] for r in records), 1),
        "by_kind": {
            kind: {"inputs": len(rows), "exit_0": sum(r["exit_code"] == 0 for r in rows), "exit_2": sum(r["exit_code"] == 2 for r in rows)}
            for kind in INPUT_KINDS
            for rows in [[r for r in records if input_kind(r["seed"]) == kind]]
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=int, default=10_000)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--work", type=Path, default=Path("/tmp/xsp-fuzz"))
    parser.add_argument("--log", type=Path, default=Path("fuzz_long.jsonl"))
    parser.add_argument("--kinds", default=",".join(INPUT_KINDS), help="comma-separated input kinds to run (the others' seeds are skipped)")
    args = parser.parse_args()
    kinds = set(args.kinds.split(","))
    if not kinds <= set(INPUT_KINDS):
        parser.error(f"--kinds: choose from {', '.join(INPUT_KINDS)}")
    done = set()
    if args.log.exists():
        done = {json.loads(line)["seed"] for line in args.log.read_text().splitlines() if line.strip()}
    seeds = [s for s in range(args.start, args.start + args.inputs) if s not in done and input_kind(s) in kinds]
    preload()
    started = time.monotonic()
    with open(args.log, "a") as log:

        def record(outcome) -> None:
            log.write(
                json.dumps(
                    {
                        "seed": outcome.seed,
                        "input": outcome.input,
                        "exit_code": outcome.exit_code,
                        "seconds": round(outcome.seconds, 3),
                        "problems": outcome.problems,
                        "last_line": (outcome.stderr.strip().splitlines() or [""])[-1][:300],
                    }
                )
                + "\n"
            )
            log.flush()

        run_many(seeds, args.work, jobs=args.jobs, on_outcome=record)
    records = [json.loads(line) for line in args.log.read_text().splitlines() if line.strip()]
    summary = summarize(records)
    # A shared machine can stall a child past the limit: run each hang again, alone, to tell.
    hung = [r["seed"] for r in records if any("hang" in p for p in r["problems"])]
    again = run_many(hung, args.work / "rerun", jobs=1)
    summary["hangs_confirmed_on_rerun"] = sum(1 for o in again if "hang" in o.problems)
    summary["hang_seeds"] = hung
    summary["wall_seconds_this_session"] = round(time.monotonic() - started, 1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
