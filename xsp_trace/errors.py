"""The one exception the CLI turns into a one-line message and exit code 2, and the one-line rule."""

from .printable import printable


def one_line(text: str) -> str:
    """`text` on one line: line breaks and other control characters (in SQLite schema text, a file
    name, a DuckDB error) written as escapes (xsp_trace/printable.py), so a message never spans lines
    and never reaches the terminal as a command."""
    return printable(text.strip())


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


def did_you_mean(word: str, choices) -> str:
    """The hint ' (did you mean X?)' naming the closest of `choices` to a mistyped `word`, or '' when none is close."""
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""
