"""Clean exits: one stderr line for every failure, SIGTERM -> 143 on every engine, nothing left behind.

Real processes where the behaviour is about processes: SIGTERM to each engine (local, -j 2,
parquet, Ray), SIGKILL of a Ray driver (its cluster must be gone within 10 s: no process carrying
its XSP_RAY_OWNER mark, read from /proc), SIGKILL of a convert followed by the next writer (which
removes the killed run's pieces in the folder and in $TMPDIR), idle -j workers stopped by a failing
sibling. In-process (CliRunner) for the usage errors.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kineto_cases import KINETO_TRACES
from xsp_trace.cli import app
from xsp_trace.convert.ray_lifetime import OWNER_VARIABLE
from xsp_trace.errors import InputError

pytestmark = pytest.mark.slow  # real processes and signals

REPO = Path(__file__).resolve().parent.parent
SMALL = KINETO_TRACES["kineto_rocm_mi250"]  # 7 KB
LARGE = KINETO_TRACES["kineto_2022_integer_us_rank3"]  # 1.7 MB: long enough to interrupt
runner = CliRunner()


def start(args: list, folder: Path, tmpdir: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmpdir)}
    env.pop("RAY_ADDRESS", None)
    return subprocess.Popen(
        [sys.executable, "-m", "xsp_trace.cli", *map(str, args)],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def wait_for(condition, timeout: float, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return False


def ray_processes(driver: int) -> list[int]:
    """Processes marked as belonging to the Ray cluster of `driver` (the driver itself left out)."""
    needle = f"\0{OWNER_VARIABLE}={driver}-".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != driver:
            try:
                if needle in b"\0" + Path(f"/proc/{entry}/environ").read_bytes():
                    found.append(int(entry))
            except OSError:
                pass
    return found


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr and "╭" not in stderr and "Usage:" not in stderr, stderr
    return lines[0]


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.mark.parametrize(
    "args, expect",
    [
        (["convert", SMALL, "--format", "xx"], "Invalid value for '--format'"),
        (["convert"], "Missing argument"),
        (["analyze", "--bogus"], "No such option: --bogus"),
        (["bogus"], "No such command 'bogus'"),
        (["query", SMALL, "select 1", "--limit", "x"], "Invalid value for '--limit'"),
    ],
)
def test_usage_errors_are_one_line(args, expect):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 2, result.output
    line = one_line(result.stderr)
    assert line.startswith("xsp-trace: error: ") and expect in line and "--help)" in line, line


def test_quoted_text_with_line_breaks_stays_on_one_line(tmp_path):
    """A file name with line breaks, and SQLite schema text quoted in an error, are escaped as repr does."""
    bad = tmp_path / "bad\nname\r.json"
    bad.write_text('{"traceEvents": [')
    result = runner.invoke(app, ["convert", str(bad), "-o", str(tmp_path / "a.duckdb"), "-q"])
    assert result.exit_code == 2, result.output
    assert one_line(result.stderr).startswith(f"xsp-trace: error: {tmp_path}/bad\\nname\\r.json: ends in the middle of the JSON")
    schema = "CREATE TABLE StringIds (\n    id INTEGER NOT NULL PRIMARY KEY,\n    value TEXT NOT NULL\n)"
    assert InputError("x.sqlite", f"has a table of another shape: {schema}").line() == (
        "x.sqlite: has a table of another shape: CREATE TABLE StringIds (\\n    id INTEGER NOT NULL PRIMARY KEY,\\n    value TEXT NOT NULL\\n)"
    )


def test_idle_workers_print_no_traceback(tmp_path):
    """-j 2, the first input converting, the second damaged: the idle worker is stopped quietly."""
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [')
    process = start(["convert", LARGE, bad, LARGE, LARGE, "-o", "out.duckdb", "-j", "2", "-q"], tmp_path, tmp_path)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 2
    assert one_line(stderr).startswith(f"xsp-trace: error: {bad}: ends in the middle of the JSON")
    # A worker still converting is stopped with SIGTERM, then SIGKILL after a grace period that a
    # loaded machine can exceed: its $TMPDIR pieces are then the next writer's to remove.
    assert all(p.name == "bad.json" or p.name.startswith("xsp-kineto-") for p in tmp_path.iterdir())
    again = start(["convert", SMALL, "-o", "again.duckdb", "-q"], tmp_path, tmp_path)
    assert again.wait(timeout=120) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again.duckdb", "bad.json"]


def test_perfetto_into_a_read_only_folder_writes_nothing(tmp_path):
    """Without CAP_DAC_OVERRIDE (root ignores folder permissions), so the folder really is read-only."""
    if shutil.which("setpriv") is None or os.geteuid() != 0:
        pytest.skip("needs setpriv and root to drop the capability")
    read_only = tmp_path / "ro"
    read_only.mkdir()
    read_only.chmod(0o555)
    caps = "-dac_override,-dac_read_search,-fowner"
    command = ["setpriv", f"--bounding-set={caps}", f"--inh-caps={caps}", sys.executable, "-m", "xsp_trace.cli"]
    args = ["convert", str(SMALL), "-o", str(tmp_path / "a.duckdb"), "--perfetto", str(read_only / "a.pftrace"), "-q"]
    result = subprocess.run([*command, *args], env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert (
        one_line(result.stderr)
        == f"xsp-trace: error: {read_only / 'a.pftrace'}: could not be written (Permission denied) (check the permissions of its folder)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ro"] and list(read_only.iterdir()) == []


def test_next_writer_removes_the_pieces_of_a_killed_run(tmp_path):
    """Pieces named by a dead pid go (beside the output and in $TMPDIR); those of a live one stay."""
    folder, tmpdir = tmp_path / "out", tmp_path / "tmp"
    folder.mkdir()
    tmpdir.mkdir()
    gone, alive = dead_pid(), os.getpid()
    (folder / f".out.duckdb.{gone}.parts").mkdir()
    (folder / f".out.duckdb.{gone}.parts" / "part00000.duckdb").write_bytes(b"x")
    (folder / f".out.duckdb.{gone}.xsp-tmp").write_bytes(b"x")
    (folder / ".out.duckdb.xsp-lock").write_bytes(b"")
    for kind in ("kineto", "stream", "ray"):
        (tmpdir / f"xsp-{kind}-{gone}-abc").mkdir()
        (tmpdir / f"xsp-{kind}-{gone}-abc" / "piece").write_bytes(b"x")
    (tmpdir / f"xsp-kineto-{alive}-abc").mkdir()
    (tmpdir / "xsp-kineto-abcdefg").mkdir()  # not ours to judge: no pid in its name
    process = start(["convert", SMALL, "-o", folder / "out.duckdb", "-q"], folder, tmpdir)
    assert process.wait(timeout=120) == 0, process.stderr.read() if process.stderr else ""
    assert sorted(p.name for p in folder.iterdir()) == ["out.duckdb"]
    assert sorted(p.name for p in tmpdir.iterdir()) == sorted([f"xsp-kineto-{alive}-abc", "xsp-kineto-abcdefg"])


def test_next_writer_after_a_real_sigkill(tmp_path):
    """SIGKILL a convert once its temporary output exists; the next convert leaves only its output."""
    folder, tmpdir = tmp_path / "out", tmp_path / "tmp"
    folder.mkdir()
    tmpdir.mkdir()
    process = start(["convert", LARGE, "-o", "out.duckdb", "-q"], folder, tmpdir)
    assert wait_for(lambda: any(p.name.endswith(".xsp-tmp") for p in folder.iterdir()), 120)
    wait_for(lambda: any(tmpdir.iterdir()), 5)  # the Kineto reader's pieces, if it gets that far
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert any(p.name.endswith(".xsp-tmp") for p in folder.iterdir())  # left by the killed run
    again = start(["convert", SMALL, "-o", "out.duckdb", "-q"], folder, tmpdir)
    assert again.wait(timeout=120) == 0
    assert sorted(p.name for p in folder.iterdir()) == ["out.duckdb"]
    assert list(tmpdir.iterdir()) == []


ENGINES = {
    "local": ["-o", "out.duckdb"],
    "local_j2": ["-o", "out.duckdb", "-j", "2"],
    "parquet": ["-o", "ds", "--format", "parquet", "-j", "1"],
    "ray_slow": ["-o", "ds", "--engine", "ray"],
}


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_sigterm_exits_143_on_every_engine(engine, tmp_path):
    """SIGTERM once the work has started: exit 143, one line, nothing left (ray_slow: Ray starting, ~30 s)."""
    folder, tmpdir = tmp_path / "out", tmp_path / "tmp"
    folder.mkdir()
    tmpdir.mkdir()
    inputs = [LARGE, LARGE] if engine != "local" else [LARGE]
    process = start(["convert", *inputs, *ENGINES[engine], "-q"], folder, tmpdir)
    if engine == "ray_slow":
        started = wait_for(lambda: len(ray_processes(process.pid)) >= 2, 120, 0.2)
    else:
        started = wait_for(lambda: any(p.name.endswith(".xsp-tmp") for p in folder.iterdir()), 120)
    assert started, process.communicate()[1]
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 143, stderr
    assert one_line(stderr) == "xsp-trace: interrupted by SIGTERM; nothing was written"
    assert list(folder.iterdir()) == [] and list(tmpdir.iterdir()) == []
    assert wait_for(lambda: not ray_processes(process.pid), 10, 0.2)


def test_ray_driver_killed_leaves_no_process_slow(tmp_path):
    """Slow (Ray starts, ~20-60 s): SIGKILL of the driver once its cluster runs; within 10 s no process
    of that cluster is left, and the output folder and $TMPDIR are empty (the watchdog removed the
    lock, the staging .parts folder and Ray's temporary folder)."""
    folder, tmpdir = tmp_path / "out", tmp_path / "tmp"
    folder.mkdir()
    tmpdir.mkdir()
    process = start(["convert", SMALL, SMALL, "-o", "ds", "--engine", "ray", "-q"], folder, tmpdir)
    assert wait_for(lambda: len(ray_processes(process.pid)) >= 3, 120, 0.2), process.communicate()[1]
    assert any(p.name.endswith(".parts") for p in folder.iterdir())
    process.send_signal(signal.SIGKILL)
    process.wait()
    killed_at = time.monotonic()
    assert wait_for(lambda: not ray_processes(process.pid), 10, 0.2), ray_processes(process.pid)
    assert wait_for(lambda: not list(folder.iterdir()) and not list(tmpdir.iterdir()), 10 - (time.monotonic() - killed_at), 0.2), (
        list(folder.iterdir()),
        list(tmpdir.iterdir()),
    )


def test_query_of_empty_sql_prints_nothing(tmp_path):
    """Found by the long fuzz run (a corpus statement truncated to nothing): a traceback before."""
    database = tmp_path / "a.duckdb"
    assert runner.invoke(app, ["convert", str(SMALL), "-o", str(database), "-q"]).exit_code == 0
    for sql in ("", "   "):
        result = runner.invoke(app, ["query", str(database), sql])
        assert result.exit_code == 0 and result.exception is None, (result.output, result.exception)
        assert result.stdout == "" and result.stderr == ""


def test_a_signal_during_library_work_is_raised_in_the_waiting_thread_only(monkeypatch):
    """run_interruptibly (the Ray engine's wait): SIGTERM while `work` runs reaches the main thread as
    Interrupted; `work` itself never sees an exception (one raised into library code between taking and
    releasing a lock deadlocked Ray Data's threads on logging's lock)."""
    import threading

    from xsp_trace import output_files

    monkeypatch.setattr(output_files, "_received", [])
    seen: list[BaseException] = []
    release = threading.Event()

    def work() -> str:
        try:
            release.wait(10)
        except BaseException as exc:  # noqa: BLE001 -- what the test looks for
            seen.append(exc)
            raise
        return "done"

    previous = signal.signal(signal.SIGTERM, output_files.on_signal)
    try:
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM)).start()
        started = time.monotonic()
        with pytest.raises(output_files.Interrupted):
            output_files.run_interruptibly(work)
        assert time.monotonic() - started < 5
        assert signal.getsignal(signal.SIGTERM) is output_files.on_signal  # the handler is put back
    finally:
        release.set()
        signal.signal(signal.SIGTERM, previous)
    assert seen == []
