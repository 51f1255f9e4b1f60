"""Record one torch.profiler (Kineto) CPU capture whose step cause is known because this script puts it
there: the known-cause traces of tests/data/known_cause_* and the diff pairs of tests/data/diff_pair_*.

    PYTHONPATH=. taskset -c 1 python3 tests/references/record_known_causes.py CASE OUT.json.gz

Every case runs the tiny CNN of xsp_trace.capture.examples.tiny_cnn on one CPU thread under
`schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE)`, so the trace holds ProfilerStep#N for the ACTIVE
steps only, CPU activities only (no record_shapes, no stack), exported with export_chrome_trace and
gzipped. Each case and what it injects is described in CASES below; each tests/data folder's record.py
runs the variants its folder holds, each in a process of its own.

The recording facts (profiler options, step schedule, batch, injected delays) live here only.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

from xsp_trace.capture.examples.tiny_cnn import TinyNet

WAIT, WARMUP, ACTIVE = 1, 2, 6
STEPS = WAIT + WARMUP + ACTIVE
BATCH = 4
# Per item, in the DataLoader's Dataset.__getitem__: 4 items x 3 ms = 12 ms of each step, several
# times the tiny model's forward + backward + SGD step on one core.
DATALOADER_SLEEP_S = 0.003
# In the slower layer's forward (inside its own record_function range), every call.
SLOWER_LAYER_SLEEP_S = 0.004
SLOW_LAYER = "features.3"  # the second conv
# Frames of FRAME_SIZE^2 pixels through PREPROCESS_PASSES filter passes: tens of ms per step.
FRAME_SIZE, PREPROCESS_PASSES = 256, 3


class SleepyImages(torch.utils.data.Dataset):
    """Random 3x16x16 images with a class label; __getitem__ sleeps `sleep_s` first (slow storage)."""

    def __init__(self, count: int, sleep_s: float):
        generator = torch.Generator().manual_seed(0)
        self.images = torch.randn(count, 3, 16, 16, generator=generator)
        self.labels = torch.randint(0, 10, (count,), generator=generator)
        self.sleep_s = sleep_s

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int):
        if self.sleep_s:
            time.sleep(self.sleep_s)
        return self.images[index], self.labels[index]


def preprocess(frames: np.ndarray) -> torch.Tensor:
    """CPU-side image preparation as a data pipeline does it: gamma, then passes of a 2x2 box filter
    and per-channel normalisation, then a centre crop; numpy only (no torch op, so only the
    record_function range around the call names it)."""
    image = np.power(frames.astype(np.float32) / 255.0, 1 / 2.2)
    for _ in range(PREPROCESS_PASSES):
        image = 0.25 * (image[:, :, 0::2, 0::2] + image[:, :, 1::2, 0::2] + image[:, :, 0::2, 1::2] + image[:, :, 1::2, 1::2])
        image = np.repeat(np.repeat(image, 2, axis=2), 2, axis=3)
        mean = image.mean(axis=(0, 2, 3), keepdims=True)
        std = image.std(axis=(0, 2, 3), keepdims=True) + 1e-6
        image = (image - mean) / std
    height, width = image.shape[2:]
    top, left = (height - 16) // 2, (width - 16) // 2
    return torch.from_numpy(np.ascontiguousarray(image[:, :, top : top + 16, left : left + 16]))


class Delayed(nn.Module):
    """Runs `layer` inside record_function(name), after sleeping `sleep_s` (0: the same range, no delay)."""

    def __init__(self, layer: nn.Module, name: str, sleep_s: float):
        super().__init__()
        self.layer, self.name, self.sleep_s = layer, name, sleep_s

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with record_function(self.name):
            if self.sleep_s:
                time.sleep(self.sleep_s)
            return self.layer(x)


def _training(loader_sleep_s: float, item_per_step: bool) -> Callable[[profile], None]:
    model = TinyNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    loader = torch.utils.data.DataLoader(SleepyImages(STEPS * BATCH, loader_sleep_s), batch_size=BATCH, num_workers=0)

    def run(prof: profile) -> None:
        for images, labels in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()
            if item_per_step:
                loss.item()  # the per-step host read of the loss, as a logging loop does
            prof.step()

    return run


def _preprocessing(prof: profile) -> None:
    model = TinyNet().eval()
    rng = np.random.default_rng(0)
    with torch.inference_mode():
        for _ in range(STEPS):
            frames = rng.integers(0, 256, size=(BATCH, 3, FRAME_SIZE, FRAME_SIZE), dtype=np.uint8)
            with record_function("preprocess"):
                x = preprocess(frames)
            model(x)
            prof.step()


def _inference(slow_layer_sleep_s: float) -> Callable[[profile], None]:
    model = TinyNet().eval()
    model.features[3] = Delayed(model.features[3], SLOW_LAYER, slow_layer_sleep_s)
    x = torch.randn(BATCH, 3, 16, 16)

    def run(prof: profile) -> None:
        with torch.inference_mode():
            for _ in range(STEPS):
                model(x)
                prof.step()

    return run


CASES: dict[str, Callable[[], Callable[[profile], None]]] = {
    # single-process DataLoader whose __getitem__ sleeps, then forward, backward, SGD step
    "dataloader_sleep": lambda: _training(DATALOADER_SLEEP_S, item_per_step=False),
    # the same training without the sleep: the other half of the diff pair
    "dataloader_no_sleep": lambda: _training(0.0, item_per_step=False),
    # training from an in-memory DataLoader, loss.item() every step; no GPU in the run
    "item_per_step": lambda: _training(0.0, item_per_step=True),
    # inference whose step starts with numpy preprocessing under record_function("preprocess")
    "cpu_preprocessing": lambda: _preprocessing,
    # inference, features.3 inside record_function(SLOW_LAYER): without and with a sleep there
    "layer_baseline": lambda: _inference(0.0),
    "layer_slower": lambda: _inference(SLOWER_LAYER_SLEEP_S),
}


# The files of each test-data folder and the case each records (the record.py in that folder).
FOLDERS: dict[str, dict[str, str]] = {
    "known_cause_dataloader_sleep": {"with_sleep.json.gz": "dataloader_sleep", "without_sleep.json.gz": "dataloader_no_sleep"},
    "known_cause_cpu_preprocessing": {"cpu_preprocessing.json.gz": "cpu_preprocessing"},
    "known_cause_item_per_step": {"item_per_step.json.gz": "item_per_step"},
    "diff_pair_slower_layer": {"baseline.json.gz": "layer_baseline", "slower_layer.json.gz": "layer_slower"},
    "diff_pair_same_run_twice": {"run_1.json.gz": "layer_baseline", "run_2.json.gz": "layer_baseline"},
}


def record_folder(folder: Path) -> None:
    """Every file of a test-data folder, each recorded by a process of its own, one after the other."""
    for file, case in FOLDERS[folder.name].items():
        subprocess.run([sys.executable, __file__, case, str(folder / file)], check=True)


def record(case: str, out: Path) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    run = CASES[case]()
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.json"
        with profile(
            activities=[ProfilerActivity.CPU],
            schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
            on_trace_ready=lambda prof: prof.export_chrome_trace(str(trace)),
        ) as prof:
            run(prof)
        with open(trace, "rb") as src, gzip.open(out, "wb", compresslevel=9) as dst:
            shutil.copyfileobj(src, dst)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in CASES:
        sys.exit(f"usage: record_known_causes.py {{{','.join(CASES)}}} OUT.json.gz")
    record(sys.argv[1], Path(sys.argv[2]))
