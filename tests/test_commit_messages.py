"""Commit messages since the 0.2.0 release keep CONTRIBUTING.md's rule: a subject of at most 72
characters, then a body that says why.

The release is found by content, not by hash (a hand merge or a rebase changes hashes): the commit
that introduced `version = "0.2.0"` in pyproject.toml. The history before it is left as it is. Without
git history (an sdist, a shallow clone that lacks the release) there is nothing to check: skipped.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_SUBJECT_CHARS = 72
RELEASE_LINE = 'version = "0.2.0"'


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout


def _release_commit() -> str:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    found = _git("log", "--format=%H", f"-S{RELEASE_LINE}", "--", "pyproject.toml").split()
    if not found:
        pytest.skip(f"no commit introduces {RELEASE_LINE!r} in this history (shallow clone?)")
    return found[-1]  # the oldest: where the string first appeared


def _messages_since(commit: str) -> list[tuple[str, str, str]]:
    """(short hash, subject, body) of every non-merge commit from `commit` (included) to HEAD."""
    parents = _git("rev-list", "--parents", "-n", "1", commit).split()[1:]
    span = f"{parents[0]}..HEAD" if parents else "HEAD"
    log = _git("log", "--no-merges", "--format=%h%x1f%s%x1f%b%x1e", span)
    messages = []
    for record in (r.strip("\n") for r in log.split("\x1e") if r.strip()):
        short, subject, body = record.split("\x1f", 2)
        messages.append((short, subject, body))
    return messages


def test_the_rule_applies_to_something():
    """The release commit is in the range checked, so a broken range cannot pass by being empty."""
    release = _release_commit()
    short = _git("rev-parse", "--short", release).strip()
    assert short in {h for h, _, _ in _messages_since(release)}


def test_commit_subjects_are_short_and_bodies_say_why():
    wrong = []
    for short, subject, body in _messages_since(_release_commit()):
        if len(subject) > MAX_SUBJECT_CHARS:
            wrong.append(f"{short}: subject of {len(subject)} characters (at most {MAX_SUBJECT_CHARS}): {subject[:60]}...")
        if not body.strip():
            wrong.append(f"{short}: no body saying why: {subject}")
    assert not wrong, "commit messages off CONTRIBUTING.md's rule:\n" + "\n".join(wrong)
