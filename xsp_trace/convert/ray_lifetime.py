"""A local Ray cluster that lives exactly as long as the `convert --engine ray` that started it.

Ray starts its GCS, raylet, agents and workers as separate processes; if the driver dies with
SIGKILL nobody shuts them down, and its agents were seen living on for over a minute. So a
command that starts its own cluster (no --ray-address, no $RAY_ADDRESS):

- starts a watchdog first (convert/ray_reaper.py), in its own session, holding the read end of a
  pipe whose write end only the driver holds. While the driver lives, the watchdog records every
  process of the cluster: those carrying XSP_RAY_OWNER=<token>, which the driver sets in its
  environment before ray.init, and every process descended from one (Ray's agents and workers,
  whose environment setproctitle may overwrite). When the pipe closes -- the driver finished,
  failed, or was killed -- it SIGKILLs them all, then removes Ray's temporary folder, the killed
  workers' $TMPDIR folders and the driver's partial outputs (they are named by its pid: no other
  writer uses them);
- gives Ray a temporary folder of its own, `$TMPDIR/xsp-ray-<pid>-*` (or /tmp when $TMPDIR is too
  long for Ray's socket paths), which the next writer also removes if its owner is dead
  (output_files.remove_stale_temp);
- keeps Ray's start-up lines out of the terminal (its log files hold them) and keeps the CLI's
  SIGTERM/SIGINT handlers, which ray.init would replace with one that exits 15.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..output_files import check_interrupted, install_signal_handlers, private_temp_prefix
from .ray_reaper import OWNER_VARIABLE, start_watchdog

WATCHDOG_WAIT_S = 20.0  # the driver waits this long for the watchdog's clean-up after its own shutdown
_SOCKET_ROOM = 60  # bytes Ray appends to its temp folder for a socket path (limit 107): session_<date>_<pid>/sockets/plasma_store


def owns_cluster(address: str | None) -> bool:
    """Whether this command starts (and so must stop) the Ray cluster: no address given anywhere."""
    return not address and not os.environ.get("RAY_ADDRESS")


def _ray_temp_folder() -> Path:
    base = Path(tempfile.gettempdir())
    if len(str(base)) + 30 + _SOCKET_ROOM > 107:
        base = Path("/tmp")
    return Path(tempfile.mkdtemp(prefix=private_temp_prefix("ray"), dir=base))


@contextmanager
def _quiet_fds() -> Iterator[None]:
    """fd 1 and 2 to /dev/null around ray.init: its banner and start-up logs are not ours to print."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)


@contextmanager
def ray_session(ray, address: str | None, leftovers: list[Path], output: Path) -> Iterator[None]:
    """ray.init for the block; a cluster this command starts is stopped afterwards, and killed with
    everything it left by the watchdog if this process dies. `leftovers`: this process's partial
    outputs, removed by the watchdog too; `output`: whose lock file it removes when free."""
    if ray.is_initialized():  # a caller's own session (tests, a notebook): theirs to manage
        yield
        return
    owned = owns_cluster(address)
    watchdog = write_end = None
    temp_folder = None
    token = f"{os.getpid()}-{secrets.token_hex(8)}"
    try:
        if owned:
            temp_folder = _ray_temp_folder()
            watchdog, write_end = start_watchdog(token, output, temp_folder, leftovers)
            os.environ[OWNER_VARIABLE] = token
        try:
            with _quiet_fds(), _keep_signal_handlers(ray):
                if owned:
                    ray.init(address="local", include_dashboard=False, log_to_driver=False, configure_logging=False, _temp_dir=str(temp_folder))
                else:
                    ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        except Exception as exc:  # noqa: BLE001 - Ray raises plain Exception/RuntimeError/ConnectionError
            check_interrupted()  # a SIGTERM that Ray's start-up loop swallowed: exit 143, not this error
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise InputError(None, f"Ray did not start ({first[:300]})", "check --ray-address, or run without --engine ray") from None
        yield
    finally:
        if ray.is_initialized():
            with _quiet_fds():
                ray.shutdown()
        os.environ.pop(OWNER_VARIABLE, None)
        if write_end is not None:
            os.close(write_end)  # the watchdog's signal: reap and clean up
        if watchdog is not None:
            try:
                watchdog.wait(WATCHDOG_WAIT_S)
            except subprocess.TimeoutExpired:
                watchdog.kill()
        if temp_folder is not None:
            shutil.rmtree(temp_folder, ignore_errors=True)


@contextmanager
def _keep_signal_handlers(ray) -> Iterator[None]:
    """ray.init replaces the SIGTERM handler with one that exits 15, and a SIGTERM while it starts
    the cluster was then lost in its start-up loop; its setter is made a no-op for the call, so a
    SIGTERM unwinds as anywhere else (exit 143; the watchdog reaps what was started)."""
    utils: Any = getattr(getattr(ray, "_private", None), "utils", None)
    setter = getattr(utils, "set_sigterm_handler", None)
    if setter is not None:
        utils.set_sigterm_handler = lambda handler: None
    try:
        yield
    finally:
        if setter is not None:
            utils.set_sigterm_handler = setter
        install_signal_handlers()
