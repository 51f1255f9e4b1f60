"""Turning a .nsys-rep into a SQLite export with the nsys CLI, without touching the report.

The export is cached beside the report (`.xsp-cache/`, keyed by size and mtime) or, where that
folder cannot be written or is not this user's own (../cache_folder.py), in a temporary folder that
lives as long as the conversion. A cached export is used only when it is this user's regular file
and a whole SQLite database (its header's page count times page size is its length); a damaged one
is exported again with one warning, another user's or a symbolic link is left alone.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ...errors import InputError
from ...formats import nsys_export as fmt
from ...formats.file_magic import SQLITE_HEADER_BYTES, SQLITE_MAGIC, sqlite_length
from ...output_files import atomic_output, private_temp_prefix
from ..cache_folder import beside_folder, entry_problem, evict, warn


def find_nsys(explicit: str | None) -> str:
    """The nsys binary: --nsys, then $NSYS, then PATH."""
    for candidate in (explicit, os.environ.get("NSYS")):
        if candidate:
            found = shutil.which(candidate)
            if found is None:
                raise InputError(candidate, "is not an executable nsys", "pass --nsys PATH or set NSYS to the nsys binary")
            return found
    found = shutil.which("nsys")
    if found is None:
        raise InputError(
            None,
            "nsys (Nsight Systems CLI) is not installed or not on PATH, and a .nsys-rep needs it to be exported",
            "install Nsight Systems, pass --nsys PATH, or convert an exported .sqlite instead (nsys export --type sqlite)",
        )
    return found


def nsys_version(nsys: str) -> str:
    out = subprocess.run([nsys, "--version"], capture_output=True, text=True, timeout=60)
    m = re.search(r"(\d{4}\.\d+\.\d+(?:\.\d+)?)", out.stdout + out.stderr)
    return m.group(1) if m else "unknown"


def report_writer_version(report: Path) -> str | None:
    """Version of the nsys that wrote a report, read from its header (e.g. '2026.1.2')."""
    with open(report, "rb") as f:
        m = fmt.REPORT_HEADER_VERSION.search(f.read(128))
    return ".".join(g.decode() for g in m.groups()) if m else None


def _export_problem(export: Path) -> tuple[bool, str | None]:
    """(broken, why) for an existing cached export: broken is this user's file that is no whole SQLite
    database (exported again); otherwise why says whose or what it is (not touched), or is None (usable)."""
    problem = entry_problem(export)
    if problem is not None:
        return False, problem
    with open(export, "rb") as f:
        header = f.read(SQLITE_HEADER_BYTES)
    if not header.startswith(SQLITE_MAGIC):
        return True, "is not an SQLite database"
    expected = sqlite_length(header)
    if expected is not None and export.stat().st_size != expected:
        return True, f"is {export.stat().st_size} bytes where its header says {expected} (truncated?)"
    return False, None


def _version_tuple(text: str | None) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text or ""))


@contextmanager
def exported_sqlite(report: Path, nsys_hint: str | None) -> Iterator[Path]:
    """Path of a SQLite export of `report` (cached), exporting it with nsys if needed."""
    report = Path(report)
    stat = report.stat()
    cache = beside_folder(report)
    key = f"{report.name}.{stat.st_size}-{stat.st_mtime_ns}.sqlite"
    if cache is not None and os.path.lexists(cache / key):
        broken, why = _export_problem(cache / key)
        if why is None:
            yield cache / key
            return
        if broken:
            warn(cache / key, f"{why}: a damaged cache entry, exported again")
            (cache / key).unlink()
        else:
            warn(cache / key, f"{why}, so it is not used; exporting into a temporary folder instead")
            cache = None
    nsys = find_nsys(nsys_hint)
    with tempfile.TemporaryDirectory(prefix=private_temp_prefix("nsys")) as tmp:
        target = Path(tmp) / "export.sqlite"
        proc = subprocess.run(
            [
                nsys,
                "export",
                "--type",
                "sqlite",
                "--force-overwrite",
                "true",
                "--lazy",
                "false",
                "--quiet",
                "true",
                "--output",
                str(target),
                str(report),
            ],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0 or not target.exists():
            _raise_export_failure(report, nsys, proc.stdout + proc.stderr)
        if cache is not None:
            final = cache / key
            with atomic_output(final) as tmp_final:
                shutil.move(str(target), tmp_final)
            evict(cache, keep=final)
            yield final
        else:
            yield target


def _raise_export_failure(report: Path, nsys: str, output: str) -> None:
    installed = nsys_version(nsys)
    writer = report_writer_version(report)
    if writer and _version_tuple(writer)[:3] > _version_tuple(installed)[:3]:
        raise InputError(
            report,
            f"was written by nsys {writer or 'a newer version'}, but the installed nsys {installed} cannot read reports from newer versions",
            f"install nsys {writer or 'newer'} or later (--nsys PATH), or export it there with `nsys export --type sqlite` and convert the .sqlite",
        )
    detail = " ".join(line.strip() for line in output.splitlines() if line.strip())[:300]
    raise InputError(
        report,
        f"nsys {installed} could not export it ({detail or 'no message'})",
        "check that it is a complete .nsys-rep, or convert an exported .sqlite",
    )
