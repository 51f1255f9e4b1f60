"""Scaled benchmark inputs made from the real fixtures (one place for every bench script).

- Kineto: the largest real GPU trace (A100 rank 3 of 8, 2022: 109k events, 35 MB of JSON)
  repeated until the JSON reaches a target size. Copy k is shifted past copy k-1 in time and
  gets fresh ids (correlation ids, flow ids, External ids, ProfilerStep numbers), so each copy
  links, nests and counts iterations exactly like the original. Written as gzip (level 1).
- nsys: the real PyTorch 2xH100 export grown N-fold by bench/peers/make_scaled_nsys.py (all activity
  tables and NVTX, shifted times and correlation ids).

Files are cached under bench/data/ (git-ignored) by name; a half-written file is never left
(temp then rename).

    python -m bench.peers.scaled_inputs kineto 100M 500M 1G
    python -m bench.peers.scaled_inputs nsys 30 300
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
from pathlib import Path

from .make_scaled_nsys import grow

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "data"
KINETO_FIXTURE = ROOT / "tests" / "data" / "kineto_2022_integer_us_rank3" / "hta_a100_rank3_of_8_2022.json.gz"
NSYS_FIXTURE = ROOT / "tests" / "data" / "nsys_2026_pytorch_2xh100" / "nsysai_h100_2gpu_1s_nsys2026.2.sqlite"

_ID_ARGS = ("correlation", "External id")
_STEP_PREFIX = "ProfilerStep#"


def parse_size(text: str) -> int:
    """'100M' / '1G' / '250000000' -> bytes (decimal units, as file sizes are quoted)."""
    text = text.strip().upper()
    units = {"K": 10**3, "M": 10**6, "G": 10**9}
    if text[-1:] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def size_label(size: int) -> str:
    return f"{size / 1e9:g}G" if size >= 10**9 else f"{size / 1e6:g}M"


def _shift_event(event: dict, copy: int, time_shift: int, id_shift: int, step_shift: int) -> dict:
    if copy == 0:
        return event
    e = dict(event)
    if e.get("ph") != "M" and isinstance(e.get("ts"), int):
        e["ts"] += copy * time_shift
    if isinstance(e.get("id"), int):
        e["id"] += copy * id_shift
    args = e.get("args")
    if isinstance(args, dict) and any(k in args for k in _ID_ARGS):
        args = dict(args)
        for key in _ID_ARGS:
            if isinstance(args.get(key), int) and args[key] > 0:
                args[key] += copy * id_shift
        e["args"] = args
    name = e.get("name")
    if isinstance(name, str) and name.startswith(_STEP_PREFIX) and name[len(_STEP_PREFIX) :].isdigit():
        e["name"] = f"{_STEP_PREFIX}{int(name[len(_STEP_PREFIX) :]) + copy * step_shift}"
    return e


def scaled_kineto(target_bytes: int, folder: Path = DATA, source: Path = KINETO_FIXTURE) -> Path:
    """A gzip Kineto trace of about target_bytes of JSON (at least that many), cached by size."""
    path = folder / f"kineto_a100_{size_label(target_bytes)}.json.gz"
    if not path.exists():
        _write_kineto(path, source, target_bytes=target_bytes)
    return path


def kineto_copies(copies: int, folder: Path, source: Path = KINETO_FIXTURE) -> Path:
    """The trace repeated exactly `copies` times (bench/critical_path.py --copies)."""
    path = folder / f"kineto_a100_x{copies}.json.gz"
    if not path.exists():
        _write_kineto(path, source, copies=copies)
    return path


def _write_kineto(path: Path, source: Path, *, target_bytes: int | None = None, copies: int | None = None) -> None:
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    raw = json.load(gzip.open(source))
    events = raw.pop("traceEvents")
    timed = [e for e in events if isinstance(e.get("ts"), int) and e.get("ph") != "M"]
    time_shift = max(e["ts"] + e.get("dur", 0) for e in timed) - min(e["ts"] for e in timed) + 1000
    id_shift = 1 + max(
        [e["id"] for e in events if isinstance(e.get("id"), int)]
        + [e["args"][k] for e in events for k in _ID_ARGS if isinstance(e.get("args", {}).get(k), int)]
    )
    steps = [
        int(e["name"][len(_STEP_PREFIX) :])
        for e in events
        if isinstance(e.get("name"), str) and e["name"].startswith(_STEP_PREFIX) and e["name"][len(_STEP_PREFIX) :].isdigit()
    ]
    step_shift = (max(steps) - min(steps) + 1) if steps else 0
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    written = 0
    with gzip.open(tmp, "wb", compresslevel=1) as f:
        head = json.dumps(raw)[:-1] + ', "traceEvents": [\n'
        f.write(head.encode())
        written += len(head)
        copy = 0
        sep = ""
        while (copies is None and written < target_bytes) or (copies is not None and copy < copies):
            lines = [json.dumps(_shift_event(e, copy, time_shift, id_shift, step_shift)) for e in events]
            chunk = (sep + ",\n".join(lines)).encode()
            f.write(chunk)
            written += len(chunk)
            sep = ",\n"
            copy += 1
        f.write(b"\n]}\n")
    os.replace(tmp, path)


def scaled_nsys(copies: int, folder: Path = DATA, source: Path = NSYS_FIXTURE) -> Path:
    """The H100 nsys export grown `copies`-fold (make_scaled_nsys.py), cached by factor."""
    path = folder / f"nsys_h100_x{copies}.sqlite"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    grow(source, path, copies)
    return path


def uncompressed_bytes(path: Path) -> int:
    with gzip.open(path, "rb") as f:
        total = 0
        while chunk := f.read(1 << 20):
            total += len(chunk)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=["kineto", "nsys"])
    parser.add_argument("sizes", nargs="+", help="kineto: JSON sizes (100M, 1G); nsys: copy factors")
    args = parser.parse_args()
    for size in args.sizes:
        path = scaled_kineto(parse_size(size)) if args.kind == "kineto" else scaled_nsys(int(size))
        print(path, f"{path.stat().st_size / 1e6:.0f} MB on disk")


if __name__ == "__main__":
    main()
