"""Grow a real nsys SQLite export to millions of kernels by repeating its time window.

Each copy k of the activity rows (kernels, CUDA API calls, memcpy, memset, synchronization,
NVTX ranges and marks) is shifted by k times the window length and gets correlation ids
offset by k times the id span, so every copy links and nests exactly like the original.

    python -m bench.peers.make_scaled_nsys tests/data/nsys_2026_pytorch_2xh100/*.sqlite bench/data/h100_x290.sqlite --copies 290
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import time
from pathlib import Path

SHIFTED = {
    # table: columns that carry a correlation id
    "CUPTI_ACTIVITY_KIND_KERNEL": ("correlationId",),
    "CUPTI_ACTIVITY_KIND_RUNTIME": ("correlationId",),
    "CUPTI_ACTIVITY_KIND_MEMCPY": ("correlationId",),
    "CUPTI_ACTIVITY_KIND_MEMSET": ("correlationId",),
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": ("correlationId",),
    "NVTX_EVENTS": (),
}
DOMAIN_CREATE = 75  # NVTX domain registrations are not repeated


def grow(source: Path, target: Path, copies: int) -> dict:
    tmp = target.with_suffix(".tmp")
    shutil.copyfile(source, tmp)
    con = sqlite3.connect(tmp)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    present = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    tables = [t for t in SHIFTED if t in present]
    lo, hi = con.execute(
        " UNION ALL ".join(f'SELECT min(start), max(coalesce("end", start)) FROM {t}' for t in tables)
        .join(["SELECT min(a), max(b) FROM (", ")"])
        .replace("SELECT min(start)", "SELECT min(start) AS a")
        .replace('max(coalesce("end", start)) FROM', 'max(coalesce("end", start)) AS b FROM', 1)
    ).fetchone()
    window = hi - lo + 1
    corr_span = max(con.execute(f"SELECT coalesce(max(correlationId), 0) FROM {t}").fetchone()[0] for t in tables if t != "NVTX_EVENTS") + 1
    for table in tables:
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
        originals = f"SELECT * FROM {table}" + (f" WHERE eventType <> {DOMAIN_CREATE}" if table == "NVTX_EVENTS" else "")
        con.execute(f"CREATE TEMP TABLE original AS {originals}")
        for k in range(1, copies):
            exprs = []
            for c in cols:
                if c in ("start", "end"):
                    exprs.append(f'"{c}" + {k * window}')
                elif c in SHIFTED[table]:
                    exprs.append(f'"{c}" + {k * corr_span}')
                else:
                    exprs.append(f'"{c}"')
            con.execute(
                f"INSERT INTO {table} ({', '.join(map(chr(34).__add__, [c + chr(34) for c in cols]))}) SELECT {', '.join(exprs)} FROM original"
            )
        con.execute("DROP TABLE original")
        con.commit()
    counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}
    con.close()
    tmp.rename(target)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--copies", type=int, required=True)
    args = parser.parse_args()
    args.target.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    counts = grow(args.source, args.target, args.copies)
    print(f"{args.target}: {args.target.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - t0:.1f} s", counts)


if __name__ == "__main__":
    main()
