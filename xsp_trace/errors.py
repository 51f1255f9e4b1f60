"""The one exception the CLI turns into a one-line message and exit code 2."""


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
        return f"{where}{self.problem}{todo}"
