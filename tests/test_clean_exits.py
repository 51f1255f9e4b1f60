"""Clean exits: one stderr line for every failure, SIGTERM -> 143 on every engine, nothing left behind.

Real processes where the behaviour is about processes: SIGTERM to each engine (local, -j 2,
parquet, Ray), SIGKILL of a Ray driver (every process of the run must be gone within 10 s: each
test starts the driver in a session of its own, and /proc tells which processes are in it),
SIGINT/SIGTERM/SIGKILL of a `-j 2` convert (no private $TMPDIR folder left), SIGKILL of a convert
followed by the next writer (which removes the killed run's pieces in the folder and in $TMPDIR),
idle -j workers stopped by a failing sibling. In-process (CliRunner) for the usage errors.
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
from xsp_trace.convert.ray_reaper import process_table
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


def session(leader: int) -> list[int]:
    """The live processes of the session `leader` started (start() gives each command its own;
    Ray, the -j workers and what they start stay in it), `leader` itself left out."""
    found = []
    for pid in process_table():
        try:
            fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == leader and pid != leader and fields[0] not in (b"Z", b"X"):
            found.append(pid)
    return found


def watchdogs(driver: int) -> list[int]:
    """The Ray watchdog of `driver` (in a session of its own), while it runs."""
    needle = b"\0xsp_trace.convert.ray_reaper\0"
    found = []
    for pid in process_table():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if needle in argv and argv.split(b"\0")[4:5] == [str(driver).encode()]:
            found.append(pid)
    return found


def titles(pids: list[int]) -> str:
    names = []
    for pid in pids:
        try:
            names.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:60])
        except OSError:
            pass
    return "; ".join(names)


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
    # loaded machine can exceed: the parent then removes its $TMPDIR pieces.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json"]


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
        started = wait_for(lambda: len(session(process.pid)) >= 2, 120, 0.2)
    else:
        started = wait_for(lambda: any(p.name.endswith(".xsp-tmp") for p in folder.iterdir()), 120)
    assert started, process.communicate()[1]
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 143, stderr
    assert one_line(stderr) == "xsp-trace: interrupted by SIGTERM; nothing was written"
    assert list(folder.iterdir()) == [] and list(tmpdir.iterdir()) == []
    assert wait_for(lambda: not session(process.pid) and not watchdogs(process.pid), 10, 0.2), titles(session(process.pid))


RAY_AGENTS = ("ray::DashboardAgent", "ray::RuntimeEnvAgent")  # their environment may lack the mark: setproctitle


def test_ray_driver_killed_leaves_no_process_slow(tmp_path):
    """Slow (Ray starts, ~20-60 s): SIGKILL of the driver once its cluster runs, agents included;
    within 10 s no process of the driver's session is left (GCS, raylet, agents, workers), nor its
    watchdog, and the output folder and $TMPDIR are empty (the watchdog removed the lock, the
    staging .parts folder, Ray's temporary folder and the killed workers' folders)."""
    folder, tmpdir = tmp_path / "out", tmp_path / "tmp"
    folder.mkdir()
    tmpdir.mkdir()
    process = start(["convert", SMALL, SMALL, "-o", "ds", "--engine", "ray", "-q"], folder, tmpdir)
    agents_up = wait_for(lambda: all(agent in titles(session(process.pid)) for agent in RAY_AGENTS), 120, 0.2)
    assert agents_up and watchdogs(process.pid), (titles(session(process.pid)), process.poll())
    assert any(p.name.endswith(".parts") for p in folder.iterdir())
    process.send_signal(signal.SIGKILL)
    process.wait()
    killed_at = time.monotonic()
    assert wait_for(lambda: not session(process.pid) and not watchdogs(process.pid), 10, 0.2), titles(session(process.pid))
    assert wait_for(lambda: not list(folder.iterdir()) and not list(tmpdir.iterdir()), 10 - (time.monotonic() - killed_at), 0.2), (
        list(folder.iterdir()),
        list(tmpdir.iterdir()),
    )


def test_ray_failure_prints_one_line_slow(tmp_path):
    """Slow (Ray starts): a trace that fails in its Ray task is the only line on stderr -- no
    "Progress bars disabled" or other line from Ray Data's or Ray's loggers before it."""
    folder, tmpdir = tmp_path / "out", tmp_path / "tmp"
    folder.mkdir()
    tmpdir.mkdir()
    bad = folder / "bad.json"
    bad.write_text('{"traceEvents": [')
    process = start(["convert", SMALL, bad, "-o", "ds", "--engine", "ray"], folder, tmpdir)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 2, stderr
    line = one_line(stderr)
    if line.startswith("xsp-trace: error: Ray did not start"):  # its raylet must register within 30 s
        pytest.skip(f"Ray did not start on this machine: {line}")
    assert line.startswith(f"xsp-trace: error: {bad}: ends in the middle of the JSON"), stderr
    assert sorted(p.name for p in folder.iterdir()) == ["bad.json"] and list(tmpdir.iterdir()) == []


def test_ray_data_logs_nothing_on_the_terminal_while_it_runs(capsys):
    """No cluster needed: Ray Data's and Ray's loggers print on stderr through handlers of their
    own; inside _quiet_ray_data even their warnings (Ray Data's "Progress bars disabled") and errors
    stay off it, and the handlers print again afterwards."""
    import logging

    pytest.importorskip("ray.data")
    from xsp_trace.convert.ray_engine import _quiet_ray_data, _ray

    ray = _ray()
    capsys.readouterr()
    with _quiet_ray_data(ray):
        logging.getLogger("ray.data._internal.progress").warning("Progress bars disabled.")
        logging.getLogger("ray.data").error("a task failed")
        logging.getLogger("ray._private.worker").warning("a worker died")
    assert capsys.readouterr().err == ""
    logging.getLogger("ray.data").warning("after the run")
    assert "after the run" in capsys.readouterr().err


FAKE_DRIVER = """
import os, subprocess, sys, time
from pathlib import Path
from xsp_trace.convert.ray_reaper import OWNER_VARIABLE, start_watchdog

folder = Path(sys.argv[1])
temp = folder / f"xsp-ray-{os.getpid()}-x"
temp.mkdir()
start_watchdog("token", folder / "ds", temp, [])
os.environ[OWNER_VARIABLE] = "token"
# Like Ray's raylet: it carries the mark, and starts an agent whose environment lacks it
# (setproctitle can overwrite it), which starts workers of its own. `; :` keeps sh from exec'ing.
raylet = subprocess.Popen(["sh", "-c", "env -i sh -c 'sleep 301 & sleep 302; :' & sleep 303; :"])
print(raylet.pid, flush=True)
time.sleep(300)
"""


def test_watchdog_ends_every_process_under_a_killed_driver(tmp_path):
    """No Ray needed: a fake driver starts the real watchdog and a process tree like Ray's. Its
    'raylet' dies first (as Ray's does, with the driver, by PR_SET_PDEATHSIG), so its 'agent',
    without the mark and handed to init, is known only from the watchdog's records; then the
    driver is SIGKILLed. Within 10 s nothing of the tree is left, and the watchdog removed Ray's
    folder and ended itself."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp_path)}
    driver = subprocess.Popen([sys.executable, "-c", FAKE_DRIVER, str(tmp_path)], env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        raylet = int(driver.stdout.readline())  # type: ignore[union-attr]
        assert wait_for(lambda: len(session(driver.pid)) >= 5, 30), titles(session(driver.pid))  # sh, sh, 3 sleeps
        time.sleep(1)  # a few of the watchdog's scans
        tree = session(driver.pid)
        os.kill(raylet, signal.SIGKILL)
        assert wait_for(lambda: raylet not in session(driver.pid), 10)
        orphans = session(driver.pid)
        assert len(orphans) >= 3 and {process_table()[pid].parent for pid in orphans} - set(tree)  # the agent's parent is not in the tree
    finally:
        driver.kill()
        driver.wait()
    assert wait_for(lambda: not session(driver.pid) and not watchdogs(driver.pid), 10, 0.1), titles(session(driver.pid))
    assert list(tmp_path.iterdir()) == []


J2_SIGNALS = {"sigint_to_the_group": (signal.SIGINT, True), "sigterm": (signal.SIGTERM, False), "sigkill": (signal.SIGKILL, False)}


@pytest.mark.parametrize("how", sorted(J2_SIGNALS))
def test_interrupted_parallel_convert_leaves_no_temp_folder(how, tmp_path):
    """`-j 2` interrupted three times: as its workers start, once they convert ($TMPDIR holds their
    xsp-kineto-* folders), and a second into that. A Ctrl-C reaches the workers and then the
    parent's SIGTERM does (a second signal once cut their clean-up short); after a SIGKILL of the
    parent the workers unwind on PR_SET_PDEATHSIG. Every time: no process of the run and no xsp-*
    folder left in $TMPDIR (the output folder's pieces after a SIGKILL are the next writer's)."""
    signum, to_group = J2_SIGNALS[how]
    for moment in ("starting", "converting", "later"):
        interrupt_parallel_convert(tmp_path / moment, moment, signum, to_group)


def interrupt_parallel_convert(base: Path, moment: str, signum: int, to_group: bool) -> None:
    folder, tmpdir = base / "out", base / "tmp"
    folder.mkdir(parents=True)
    tmpdir.mkdir()
    process = start(["convert", LARGE, LARGE, LARGE, LARGE, "-o", "out.duckdb", "-j", "2", "-q"], folder, tmpdir)
    if moment == "starting":
        assert wait_for(lambda: any(p.name.endswith(".parts") for p in folder.iterdir()), 120), moment
    else:
        assert wait_for(lambda: any(p.name.startswith("xsp-kineto-") for p in tmpdir.iterdir()), 120), moment
    if moment == "later":
        time.sleep(1)
    if to_group:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    _, stderr = process.communicate(timeout=120)
    assert wait_for(lambda: not session(process.pid), 30), (moment, titles(session(process.pid)))
    assert list(tmpdir.iterdir()) == [], (moment, stderr)
    if signum != signal.SIGKILL:
        assert process.returncode == 128 + signum, (moment, stderr)
        assert one_line(stderr) == f"xsp-trace: interrupted by {signal.Signals(signum).name}; nothing was written", moment
        assert list(folder.iterdir()) == [], moment


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
