"""Results of a sequence of reads, each read on a thread of its own while the caller works on the one before."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


def read_ahead(read: Callable[[Item], Result], items: Sequence[Item], thread_name: str) -> Iterator[Result]:
    """read(item) for each item, in order, the next one already running on a thread while the caller
    uses this one: worth it where `read` leaves the GIL (DuckDB, SQLite, numpy). At most two results
    exist at once: the one handed out (del it before the next) and the one being read."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix=thread_name) as pool:
        pending = pool.submit(read, items[0]) if items else None
        for index in range(len(items)):
            assert pending is not None
            done = [pending.result()]
            pending = pool.submit(read, items[index + 1]) if index + 1 < len(items) else None
            yield done.pop()  # (popped: this frame holds no reference while the caller works)
