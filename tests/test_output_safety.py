"""Outputs are atomic, never an input, serialised between writers, and signals leave nothing behind.

Real processes: concurrent `convert --append` runs, SIGTERM/SIGINT in the middle of a convert,
SIGKILL of a parallel (-j 2) parent, a file size limit (ulimit -f). The in-process checks use
typer's CliRunner. Every failure must be exit 2 with one line, and the folder must hold exactly
what it held before (no temp file, no .wal, no lock file).
"""

from __future__ import annotations

import hashlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from kineto_cases import KINETO_TRACES
from xsp_trace.cli import app

pytestmark = pytest.mark.slow  # real processes and signals

REPO = Path(__file__).resolve().parent.parent
SMALL = KINETO_TRACES["kineto_rocm_mi250"]  # 7 KB: quick
LARGE = KINETO_TRACES["kineto_2022_integer_us_rank3"]  # 1.7 MB: a few seconds, long enough to interrupt
runner = CliRunner()


def cli(*args, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "xsp_trace.cli", *map(str, args)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def one_error_line(result_stderr: str) -> str:
    lines = [line for line in result_stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result_stderr
    assert lines[0].startswith("xsp-trace: error: ") and "Traceback" not in result_stderr
    return lines[0]


def run_count(database: Path) -> int:
    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute("SELECT count(*) FROM runs").fetchone()[0]


@pytest.fixture
def work(tmp_path):
    shutil.copyfile(SMALL, tmp_path / "a.json.gz")
    return tmp_path


@pytest.fixture(scope="module")
def small_db(tmp_path_factory):
    folder = tmp_path_factory.mktemp("db")
    result = runner.invoke(app, ["convert", str(SMALL), "-o", str(folder / "db.duckdb"), "-q"])
    assert result.exit_code == 0, result.output
    return folder / "db.duckdb"


# -- output = input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["convert", "{a}", "-o", "{a}", "--overwrite", "-q"],
        ["convert", "{a}", "-o", "{link}", "--overwrite", "-q"],
        ["convert", "{a}", "-o", "{hard}", "--overwrite", "-q"],
        ["convert", "{a}", "-o", "{db}", "--append", "-q", "--perfetto", "{db}"],
        ["convert", "{a}", "-o", "{db}", "--append", "-q", "--perfetto", "{a}"],
        ["perfetto", "{db}", "-o", "{db}"],
        ["perfetto", "{db}", "-o", "{link_db}"],
        ["analyze", "{db}", "--report", "{db}"],
        ["convert", "{a}", "--format", "parquet", "-o", "{folder}", "--overwrite", "-q"],
    ],
    ids=[
        "convert",
        "convert_symlink",
        "convert_hardlink",
        "perfetto_is_output",
        "perfetto_is_input",
        "perfetto",
        "perfetto_symlink",
        "analyze_report",
        "parquet_folder_holding_input",
    ],
)
def test_output_that_is_an_input_is_refused(args, work, small_db):
    db = work / "db.duckdb"
    shutil.copyfile(small_db, db)
    (work / "link.json.gz").symlink_to(work / "a.json.gz")
    os.link(work / "a.json.gz", work / "hard.json.gz")
    (work / "link.duckdb").symlink_to(db)
    names = {
        "a": work / "a.json.gz",
        "link": work / "link.json.gz",
        "hard": work / "hard.json.gz",
        "db": db,
        "link_db": work / "link.duckdb",
        "folder": work,
    }
    before = {p: digest(p) for p in (work / "a.json.gz", db)}
    files_before = listing(work)
    result = runner.invoke(app, [a.format(**names) for a in args])
    assert result.exit_code == 2, result.output
    assert "is also an input" in one_error_line(result.stderr)
    assert {p: digest(p) for p in before} == before
    assert listing(work) == files_before


@pytest.mark.parametrize("case", ["folder", "under_file", "missing_folder", "name_too_long"])
def test_output_paths_that_cannot_work(case, work):
    target = {
        "folder": work,
        "under_file": work / "a.json.gz" / "out.duckdb",
        "missing_folder": work / "nope" / "out.duckdb",
        "name_too_long": work / ("x" * 260),
    }[case]
    files_before = listing(work)
    result = runner.invoke(app, ["convert", str(work / "a.json.gz"), "-o", str(target), "-q"])
    assert result.exit_code == 2, result.output
    line = one_error_line(result.stderr)
    assert {
        "folder": "is a folder",
        "under_file": "which is a file, not a folder",
        "missing_folder": "folder does not exist",
        "name_too_long": "longer than 255",
    }[case] in line
    assert listing(work) == files_before


def test_long_name_whose_temp_name_would_be_too_long(work):
    """A 250-byte name is valid, `.<name>.<pid>.tmp` would not be: the temp name is shortened."""
    target = work / ("y" * 243 + ".duckdb")
    result = runner.invoke(app, ["convert", str(work / "a.json.gz"), "-o", str(target), "-q"])
    assert result.exit_code == 0, result.output
    assert run_count(target) == 1
    assert listing(work) == {"a.json.gz", target.name}


# -- concurrent writers --------------------------------------------------------------------------


def test_concurrent_appends_are_serialised_not_lost(work):
    db = work / "db.duckdb"
    first = runner.invoke(app, ["convert", str(work / "a.json.gz"), "-o", str(db), "-q"])
    assert first.exit_code == 0, first.output
    writers = [cli("convert", work / "a.json.gz", "-o", db, "--append", "-q", "--label", f"w{i}") for i in range(4)]
    outcomes = [(p.wait(timeout=300), p.stderr.read()) for p in writers]
    assert [rc for rc, _ in outcomes] == [0] * 4, outcomes
    with duckdb.connect(str(db), read_only=True) as con:
        labels = sorted(r[0] for r in con.execute("SELECT label FROM runs WHERE label IS NOT NULL").fetchall())
        ids = [r[0] for r in con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
    assert labels == ["w0", "w1", "w2", "w3"]  # every append landed
    assert ids == [1, 2, 3, 4, 5]
    assert listing(work) == {"a.json.gz", "db.duckdb"}


def test_concurrent_creates_one_wins_the_other_is_told(work):
    db = work / "new.duckdb"
    writers = [cli("convert", work / "a.json.gz", "-o", db, "-q") for _ in range(2)]
    outcomes = sorted((p.wait(timeout=300), p.stderr.read()) for p in writers)
    assert outcomes[0][0] == 0 and outcomes[1][0] == 2, outcomes
    assert "already exists" in one_error_line(outcomes[1][1])
    assert run_count(db) == 1
    assert listing(work) == {"a.json.gz", "new.duckdb"}


# -- signals ---------------------------------------------------------------------------------


def _wait_for_temp(folder: Path, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(".xsp-tmp" in name for name in listing(folder)):
            time.sleep(0.5)  # well inside the conversion
            return
        if proc.poll() is not None:
            pytest.fail(f"convert ended before it could be interrupted: {proc.stderr.read()}")
        time.sleep(0.02)
    pytest.fail("no temporary output appeared")


@pytest.mark.parametrize("signum,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"])
def test_signal_mid_convert_keeps_previous_output(signum, code, work, small_db):
    shutil.copyfile(LARGE, work / "big.json.gz")
    db = work / "db.duckdb"
    shutil.copyfile(small_db, db)
    before = digest(db)
    proc = cli("convert", work / "big.json.gz", "-o", db, "--append", "-q")
    _wait_for_temp(work, proc)
    proc.send_signal(signum)
    rc = proc.wait(timeout=60)
    stderr = proc.stderr.read()
    assert rc == code, stderr
    assert "Traceback" not in stderr and "interrupted by" in stderr
    assert digest(db) == before
    assert listing(work) == {"a.json.gz", "big.json.gz", "db.duckdb"}


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find the workers")
def test_killed_parallel_parent_takes_its_workers_with_it(work):
    for name in ("b.json.gz", "c.json.gz"):
        shutil.copyfile(LARGE, work / name)
    proc = cli("convert", work / "b.json.gz", work / "c.json.gz", "-o", work / "db.duckdb", "-j", "2", "-q")
    deadline = time.monotonic() + 120
    workers: list[int] = []
    while time.monotonic() < deadline and len(workers) < 2:
        workers = [c for c in _children(proc.pid) if "spawn_main" in Path(f"/proc/{c}/cmdline").read_text(errors="replace")]
        time.sleep(0.1)
    assert len(workers) == 2, "the two workers never started"
    time.sleep(1.0)  # both are converting
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.1)
    assert not any(_alive(w) for w in workers), "workers outlived their SIGKILLed parent"
    # What the SIGKILLed parent could not remove goes with the next write of the same output.
    result = runner.invoke(app, ["convert", str(work / "a.json.gz"), "-o", str(work / "db.duckdb"), "-q"])
    assert result.exit_code == 0, result.output
    assert listing(work) == {"a.json.gz", "b.json.gz", "c.json.gz", "db.duckdb"}


# -- write errors ------------------------------------------------------------------------------


def test_file_size_limit_is_one_line_and_leaves_nothing(work, small_db):
    db = work / "db.duckdb"

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 10, 256 << 10))

    proc = cli("convert", work / "a.json.gz", "-o", db, "-q", preexec_fn=limit)
    rc, stderr = proc.wait(timeout=120), proc.stderr.read()
    assert rc == 2, stderr
    assert "file size limit" in one_error_line(stderr)
    assert listing(work) == {"a.json.gz"}


def test_disk_full_is_one_line_and_leaves_nothing(work):
    """A real full file system: a 1 MiB tmpfs (needs root to mount; skipped elsewhere)."""
    mount = work / "small"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        proc = cli("convert", work / "a.json.gz", "-o", mount / "db.duckdb", "-q")
        rc, stderr = proc.wait(timeout=120), proc.stderr.read()
        assert rc == 2, stderr
        assert "no space left on device" in one_error_line(stderr)
        assert list(mount.iterdir()) == []
    finally:
        subprocess.run(["umount", str(mount)], check=True)
