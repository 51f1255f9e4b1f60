"""Where the SQL that ships with the package lives (inside the wheel, or at the top of a checkout)."""

from functools import lru_cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parent


def _folder(name: str) -> Path:
    for candidate in (_PACKAGE / name, _CHECKOUT / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"xsp-trace is installed without its {name}/ folder")


def schemas_dir() -> Path:
    return _folder("schemas")


def queries_dir() -> Path:
    return _folder("queries")


@lru_cache(maxsize=None)
def query_text(name: str) -> str:
    """Text of queries/<name>.sql."""
    return (queries_dir() / f"{name}.sql").read_text()


@lru_cache(maxsize=None)
def schema_text(name: str = "xsp_schema") -> str:
    return (schemas_dir() / f"{name}.sql").read_text()
