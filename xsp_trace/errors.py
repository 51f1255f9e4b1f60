"""The one exception the CLI turns into a one-line message and exit code 2, and the one-line rule."""

import re

_LINE_BREAKS = re.compile(r"\s*[\r\n\v\f\x85\u2028\u2029]+\s*")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def one_line(text: str) -> str:
    """`text` on one line: line breaks (SQLite schema text, a DuckDB error's caret lines) become
    " / ", other control characters a visible escape, so a message can never span lines."""
    text = _LINE_BREAKS.sub(" / ", text.strip())
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class InputError(Exception):
    """Bad input the user can fix: says which file, what is wrong and what to do."""

    def __init__(self, path, problem: str, fix: str | None = None):
        self.path = str(path) if path is not None else None
        self.problem = problem
        self.fix = fix
        super().__init__(self.line())

    def __reduce__(self):  # so a worker process can raise it to the parent (parallel convert)
        return (InputError, (self.path, self.problem, self.fix))

    def line(self) -> str:
        where = f"{self.path}: " if self.path else ""
        todo = f" ({self.fix})" if self.fix else ""
        return one_line(f"{where}{self.problem}{todo}")
