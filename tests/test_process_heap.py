"""glibc keeps its heap while a Perfetto export runs (xsp_trace/process_heap.py): arrays freed and
allocated again reuse the same pages instead of faulting them in anew."""

from __future__ import annotations

import platform
import resource

import numpy as np
import pytest

from xsp_trace.process_heap import keep_heap

glibc_only = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")

# 2 MiB: above glibc's static mmap threshold (128 KiB), below numpy's huge-page size (4 MiB and up
# are advised as huge pages, a few faults whatever the heap does).
ARRAY_BYTES = 2 << 20
PAGES = ARRAY_BYTES // resource.getpagesize()


def _faults_of_arrays(rounds: int) -> int:
    """Minor page faults while ARRAY_BYTES arrays are filled and freed `rounds` times."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for i in range(rounds):
        array = np.full(ARRAY_BYTES // 8, i, dtype=np.int64)  # every page written
        del array
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@glibc_only
def test_freed_arrays_reuse_their_pages_while_the_heap_is_kept():
    rounds = 40
    with keep_heap() as applied:
        assert applied
        faults = _faults_of_arrays(rounds)
    # mapped anew each round (the static threshold): rounds * PAGES faults (20 k); kept: about the first round's
    assert faults < 4 * PAGES, f"{faults} page faults for {rounds} rounds of a {PAGES}-page array"


@glibc_only
def test_nested_users_keep_it_until_the_last_one_leaves():
    with keep_heap(), keep_heap():
        pass
    with keep_heap():  # the first block left it as it found it: counting from zero again
        assert _faults_of_arrays(10) < 4 * PAGES
    import xsp_trace.process_heap as process_heap

    assert process_heap._users == 0


def test_elsewhere_it_does_nothing(monkeypatch):
    import xsp_trace.process_heap as process_heap

    monkeypatch.setattr(process_heap, "_glibc", lambda: None)
    with keep_heap() as applied:
        assert applied is False


def test_the_perfetto_command_exports_with_the_heap_kept(tmp_path, monkeypatch):
    """`xsp-trace perfetto` (its process ends with the export) runs it inside keep_heap, and
    leaves it when the export is done."""
    from typer.testing import CliRunner

    import xsp_trace.perfetto as perfetto
    import xsp_trace.process_heap as process_heap
    from perfetto_harness import handmade_db
    from xsp_trace.cli import app

    database = handmade_db.build(tmp_path / "h.duckdb")
    users_during_export = []
    export = perfetto.export_perfetto

    def recording_export(*args, **kwargs):
        users_during_export.append(process_heap._users)
        return export(*args, **kwargs)

    monkeypatch.setattr(perfetto, "export_perfetto", recording_export)
    result = CliRunner().invoke(app, ["perfetto", str(database), "-o", str(tmp_path / "h.pftrace")])
    assert result.exit_code == 0, result.output
    assert users_during_export == [1 if process_heap._glibc() is not None else 0]
    assert process_heap._users == 0
