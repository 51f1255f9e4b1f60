"""Writing an output safely: the one place every command that writes a file or folder goes through.

- Atomic: the output is written under a temporary name in its own folder and renamed over the
  target only when complete; a failure, Ctrl-C or SIGTERM removes the temporary file (and the
  `.wal`/`.tmp` DuckDB keeps beside it) and leaves the previous output as it was.
- Never over an input: `refuse_inputs` compares the output with every input (symlinks and hard
  links resolved), so `convert a.json -o a.json --overwrite` is refused, not destructive.
- Serialised: writers of the same output take an exclusive lock (`flock`) on a lock file beside
  it for the whole read-modify-rename, so two `convert --append` into one database both land.
  The lock file is removed by whoever holds it (and re-checked after locking), so none is left.
- Clear: a folder given as a file, a path under a regular file, a name too long, a full disk
  or a file size limit is one InputError line, not a traceback.

Temporary names are `.<name>.<pid>.xsp-tmp` (plus `.parts` for parallel converts), and private
folders in $TMPDIR are `xsp-<kind>-<pid>-*`; those of dead processes (a SIGKILL leaves them) are
removed by the next writer (of the same output, and of any output for $TMPDIR).
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from .errors import InputError

TEMP_SUFFIX = ".xsp-tmp"
PARTS_SUFFIX = ".parts"
LOCK_SUFFIX = ".xsp-lock"
NAME_MAX = 255
_STEM_MAX = 150  # bytes of the output name kept in temporary names (NAME_MAX minus pid and suffixes)


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived: unwind (removing temporary files) and exit 128 + signal."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


_received: list[int] = []


def on_signal(signum, frame) -> None:
    """The handler of SIGINT/SIGTERM: record the signal and unwind."""
    if not _received:
        _received.append(signum)
    raise Interrupted(signum)


def install_signal_handlers() -> None:
    """SIGINT and SIGTERM unwind the process (cleanup runs); main() turns them into exit 130/143."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)


def _record_signal(signum, frame) -> None:
    if not _received:
        _received.append(signum)


_T = TypeVar("_T")


def run_interruptibly(work: Callable[[], _T], poll_s: float = 0.1) -> _T:
    """`work()` in a helper thread while the main thread waits: a SIGINT/SIGTERM meanwhile is only
    recorded, then raised here as Interrupted -- never inside `work`'s library code, where an exception
    raised between taking and releasing a lock (logging's, inside Ray Data) deadlocks its other threads."""
    if threading.current_thread() is not threading.main_thread():
        return work()
    result: list[_T] = []
    error: list[BaseException] = []
    done = threading.Event()

    def target() -> None:
        try:
            result.append(work())
        except BaseException as exc:  # handed to the main thread
            error.append(exc)
        finally:
            done.set()

    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    for signum in previous:
        signal.signal(signum, _record_signal)
    try:
        threading.Thread(target=target, name="xsp-work", daemon=True).start()
        while not done.wait(poll_s):
            check_interrupted()
        check_interrupted()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if error:
        raise error[0]
    return result[0]


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT/SIGTERM held off the block, then raised as Interrupted when it ends: for work that
    must not be cut in the middle, such as starting worker processes (a signal between a worker's
    spawn and the hand-over of its data printed multiprocessing's traceback). They are also blocked,
    so processes started in the block begin with them blocked: until a worker installs its handlers
    (and unblocks them), a Ctrl-C waits instead of printing a KeyboardInterrupt traceback."""
    handlers = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    for signum in STOP_SIGNALS:
        signal.signal(signum, _record_signal)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # runs the recorder for a signal that waited
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    check_interrupted()


def received_signal() -> int | None:
    """The first SIGINT/SIGTERM received (DuckDB turns it into 'Query interrupted' inside a query)."""
    return _received[0] if _received else None


def check_interrupted() -> None:
    """Raise Interrupted if a signal arrived, even if some code swallowed the exception it raised."""
    if _received:
        raise Interrupted(_received[0])


def _short(name: str) -> str:
    raw = name.encode("utf-8", "surrogateescape")
    return raw[:_STEM_MAX].decode("utf-8", "ignore") if len(raw) > _STEM_MAX else name


def temp_path(output: Path, pid: int | None = None) -> Path:
    """`.<name>.<pid>.xsp-tmp` beside `output` (the name shortened so the temporary name is valid)."""
    return output.with_name(f".{_short(output.name)}.{os.getpid() if pid is None else pid}{TEMP_SUFFIX}")


def parts_path(output: Path) -> Path:
    """Folder beside `output` for the per-worker parts of a parallel convert."""
    return output.with_name(f".{_short(output.name)}.{os.getpid()}{PARTS_SUFFIX}")


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _inside(child: Path, folder: Path) -> bool:
    try:
        Path(os.path.realpath(child)).relative_to(os.path.realpath(folder))
        return True
    except ValueError:
        return False


def refuse_inputs(output: Path, inputs: Iterable[Path], what: str = "output") -> None:
    """InputError if `output` is one of `inputs` (or a folder holding one): writing it would destroy it."""
    output = Path(output)
    for path in inputs:
        path = Path(path)
        if _same(output, path) or (output.is_dir() and _inside(path, output)):
            raise InputError(output, f"is also an input ({path}); writing the {what} there would destroy it", f"choose another {what} path")


def check_output_path(output: Path, *, folder: bool = False) -> None:
    """One clear line for output paths that cannot work: in a missing folder, under a file, too long..."""
    output = Path(output)
    if len(output.name.encode("utf-8", "surrogateescape")) > NAME_MAX:
        raise InputError(output, f"has a file name longer than {NAME_MAX} bytes", "choose a shorter name")
    parent = output.parent
    if not parent.exists():
        ancestor = next((p for p in parent.parents if p.exists()), None)
        if ancestor is not None and not ancestor.is_dir():
            raise InputError(output, f"is under {ancestor}, which is a file, not a folder", "choose another output path")
        raise InputError(output, "its folder does not exist", "create the folder or choose another output path")
    if not parent.is_dir():
        raise InputError(output, f"is under {parent}, which is a file, not a folder", "choose another output path")
    _check_writable(output)
    if output.exists() or output.is_symlink():
        if folder and not output.is_dir():
            raise InputError(output, "exists and is not a folder", "choose another output folder")
        if not folder and output.is_dir():
            raise InputError(output, "is a folder", "pass a file path inside it, e.g. " + str(output / "out"))
        if not folder and not output.is_file():
            raise InputError(output, "exists and is not a regular file (a device, FIFO or socket?)", "choose another output path")


def _check_writable(output: Path) -> None:
    """A file can be created beside `output` (a read-only folder or file system is refused before any
    work, not after: `convert --perfetto` would otherwise write the database and then fail)."""
    probe = output.with_name(f".{_short(output.name)}.{os.getpid()}.xsp-probe")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return
    except OSError as exc:
        raise (write_error(output, exc) or InputError(output, f"cannot be written ({exc.strerror})", "choose another output path")) from None
    try:
        os.unlink(probe)
    except OSError:
        pass


def write_error(output: Path, exc: BaseException) -> InputError | None:
    """The InputError for a failed write of `output` (disk full, size limit, permissions), or None."""
    code = getattr(exc, "errno", None)
    text = str(exc)
    if code == errno.ENOSPC or "No space left on device" in text:
        return InputError(output, "could not be written: no space left on device", "free some space or write it elsewhere")
    if code == errno.EDQUOT or "Disk quota exceeded" in text:
        return InputError(output, "could not be written: disk quota exceeded", "free some space or write it elsewhere")
    if code == errno.EFBIG or "File too large" in text:
        return InputError(output, "could not be written: file size limit reached (ulimit -f?)", "raise the limit or write a smaller output")
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return InputError(output, f"could not be written ({getattr(exc, 'strerror', exc)})", "check the permissions of its folder")
    if code == errno.ENAMETOOLONG:
        return InputError(output, "could not be written: its name is too long", "choose a shorter path")
    if isinstance(exc, OSError):
        return InputError(output, f"could not be written ({exc.strerror or exc})", "check the disk and the path")
    return None


def remove_temp(path: Path) -> None:
    """Remove a temporary output: the file or folder and what DuckDB keeps beside it (.wal, .tmp)."""
    for p in (path, Path(f"{path}.wal"), Path(f"{path}.tmp")):
        try:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink()
        except FileNotFoundError:
            pass
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale(output: Path) -> None:
    """Temporary files of this output left by processes that no longer run (killed with SIGKILL)."""
    prefix = f".{_short(output.name)}."
    try:
        entries = list(os.scandir(output.parent))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        rest = entry.name[len(prefix) :]
        pid_text, _, tail = rest.partition(".")
        if not pid_text.isdigit() or not ("." + tail).startswith((TEMP_SUFFIX, PARTS_SUFFIX)):
            continue
        if int(pid_text) != os.getpid() and not _alive(int(pid_text)):
            remove_temp(Path(entry.path))


def private_temp_prefix(kind: str) -> str:
    """mkdtemp prefix for a private folder in $TMPDIR, `xsp-<kind>-<pid>-`: the pid lets the next
    writer tell a folder of a killed process from one in use (remove_stale_temp)."""
    return f"xsp-{kind}-{os.getpid()}-"


def _private_temp_folders(base: Path) -> Iterator[tuple[int, str]]:
    """(pid, path) of this user's `xsp-<kind>-<pid>-*` folders in `base`."""
    uid = os.getuid()
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    for entry in entries:
        parts = entry.name.split("-")
        if len(parts) < 4 or parts[0] != "xsp" or not parts[2].isdigit():
            continue
        try:
            if entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid == uid:
                yield int(parts[2]), entry.path
        except OSError:
            continue


def remove_stale_temp(folders: Iterable[Path] = ()) -> None:
    """Remove this user's `xsp-<kind>-<pid>-*` folders in $TMPDIR (and `folders`) whose process is gone."""
    for base in {Path(tempfile.gettempdir()), *map(Path, folders)}:
        for pid, path in _private_temp_folders(base):
            if pid != os.getpid() and not _alive(pid):
                shutil.rmtree(path, ignore_errors=True)


def remove_own_temp() -> None:
    """Remove this process's `xsp-<kind>-<pid>-*` folders in $TMPDIR: a `-j` worker's after each
    input, and before it ends itself, whatever a clean-up cut short by a signal left."""
    for pid, path in _private_temp_folders(Path(tempfile.gettempdir())):
        if pid == os.getpid():
            shutil.rmtree(path, ignore_errors=True)


def _lock_path(output: Path) -> Path:
    return output.with_name(f".{_short(output.name)}{LOCK_SUFFIX}")


def remove_lock_if_free(output: Path) -> None:
    """Remove the lock file of `output` if no writer holds it (one left by a killed writer): taken
    first, as every holder removes it, so a writer that holds it is never disturbed."""
    lock = _lock_path(output)
    try:
        fd = os.open(lock, os.O_RDWR)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(fd).st_ino == os.stat(lock).st_ino:
            os.unlink(lock)
    except OSError:
        pass  # held by a writer, or already gone
    finally:
        os.close(fd)


@contextmanager
def output_lock(output: Path) -> Iterator[None]:
    """Exclusive lock on `output` among xsp-trace writers (a `.<name>.xsp-lock` file, removed afterwards)."""
    lock = _lock_path(output)
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise (write_error(output, exc) or exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.fstat(fd).st_ino == os.stat(lock).st_ino
            except FileNotFoundError:
                same = False  # its holder removed it after we opened it: lock the new one
        except BaseException:
            os.close(fd)
            raise
        if same:
            break
        os.close(fd)
    try:
        yield
    finally:
        try:
            os.unlink(lock)
        except OSError:
            pass
        os.close(fd)


@contextmanager
def atomic_output(
    output: Path,
    *,
    folder: bool = False,
    replace: bool = True,
    exists_fix: str = "pass --overwrite to replace it, or choose another output path",
    keep_existing: bool = False,
    inputs: Iterable[Path] = (),
) -> Iterator[Path]:
    """Yield a temporary path beside `output`; rename it to `output` when the block succeeds.

    replace=False: an existing output is an error (checked under the lock). keep_existing=True:
    the caller starts from a copy of the existing output (append); the lock makes concurrent
    appends wait for each other. On any exception or signal the temporary path is removed and
    the previous output stays. A write error (disk full, size limit) becomes one InputError line.
    """
    output = Path(output)
    check_output_path(output, folder=folder)
    refuse_inputs(output, inputs)
    with output_lock(output):
        if output.exists() and not replace:
            raise InputError(output, "already exists", exists_fix)
        remove_stale(output)
        remove_stale_temp([Path("/tmp")])  # Ray's folder sits in /tmp when $TMPDIR is too long for its sockets
        tmp = temp_path(output)
        remove_temp(tmp)
        try:
            if keep_existing and output.exists():
                shutil.copyfile(output, tmp)
            yield tmp
            check_interrupted()
            if folder and output.exists():
                old = tmp.with_name(tmp.name + ".old")
                os.replace(output, old)
                os.replace(tmp, output)
                remove_temp(old)
            else:
                os.replace(tmp, output)
        except BaseException as exc:
            remove_temp(tmp)
            error = write_error(output, exc) if _is_write_error(exc) else None
            if error is not None:
                raise error from exc
            raise
        finally:
            for extra in (Path(f"{tmp}.wal"), Path(f"{tmp}.tmp")):
                if extra.exists():
                    remove_temp(extra)


def _is_write_error(exc: BaseException) -> bool:
    """Disk full, quota or size limit, whichever layer (OSError, DuckDB IO/transaction error) reports it."""
    code = getattr(exc, "errno", None)
    if code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return True
    text = str(exc)
    return any(marker in text for marker in ("No space left on device", "Disk quota exceeded", "File too large"))
