"""The SQL that ships inside the package (xsp_trace/queries, xsp_trace/schemas), read via importlib.resources."""

import sys
from functools import cache
from importlib.resources import files

if sys.version_info >= (3, 11):
    from importlib.resources.abc import Traversable
else:  # Python 3.10 has it in importlib.abc only
    from importlib.abc import Traversable


def schemas_dir() -> Traversable:
    return files("xsp_trace") / "schemas"


def queries_dir() -> Traversable:
    return files("xsp_trace") / "queries"


@cache
def query_text(name: str) -> str:
    """Text of queries/<name>.sql."""
    return (queries_dir() / f"{name}.sql").read_text(encoding="utf-8")


@cache
def schema_text(name: str = "xsp_schema") -> str:
    return (schemas_dir() / f"{name}.sql").read_text(encoding="utf-8")
