"""The HTML report as a person reads it, on real traces (a ViT on an H100 with one ProfilerStep,
AlexNet on an A100 with none) and the hand-made leveled capture (tests/support/leveled.py):

- short kernel names are nsys's own `:base` names (`nsys stats --report gpukernsum:base`), the full
  name on hover, different kernels never shown alike;
- titles say per inference / per step / total truthfully (steps counted in the raw trace);
- `_ns` columns in ms; empty analyses in one "Not in this trace" list; notes as notes;
- in headless chromium (Debian's, driven by playwright-core as the Perfetto UI test does), through
  the DOM: no text outside its box or over the bars, no overlapping plot texts, no wrapped name or
  number, nothing wider than the window, ticks and units on every plot; screenshots are kept in
  tests/artifacts/ (docs/images/ holds a few).
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from conftest import DATA, NSYS_EXPORTS, nsys_stats, require_nsys
from perfetto_harness.trace_processor import HARNESS_DIR, missing_browser, node_binary
from support.leveled import ML_MODEL_NS, MLG_MODEL_NS, build
from xsp_trace.analyze.catalog import ANALYSES
from xsp_trace.analyze.report.text import short_name
from xsp_trace.cli import app

ARTIFACTS = Path(os.environ.get("XSP_TEST_ARTIFACTS", Path(__file__).parent / "artifacts"))
DOM_CHECK = HARNESS_DIR / "report_dom_check.js"
VIT = DATA / "kineto_conv_vit_h100" / "tracelens_h100_falconsai_vit.json.gz"
ALEXNET = DATA / "kineto_cuda_sync_alexnet" / "hta_a100_alexnet.json.gz"
runner = CliRunner()


def _raw_events(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as f:
        return json.load(f)["traceEvents"]


def _profiler_steps(path: Path) -> int:
    return len({e["name"] for e in _raw_events(path) if re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))})


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """(database, report) per trace."""
    folder = tmp_path_factory.mktemp("reports")
    databases = {"handmade": build(folder / "handmade.duckdb")}
    for key, raw in (("vit", VIT), ("alexnet", ALEXNET)):
        databases[key] = folder / f"{key}.duckdb"
        result = runner.invoke(app, ["convert", str(raw), "-o", str(databases[key])])
        assert result.exit_code == 0, result.output
    out = {}
    for key, db in databases.items():
        html = folder / f"{key}.html"
        result = runner.invoke(app, ["analyze", str(db), "-a", "model_info", "--format", "csv", "--report", str(html)])
        assert result.exit_code == 0, result.output
        out[key] = (db, html)
    return out


def _nsys_base_names(source: Path, workdir: Path) -> set[str]:
    """Kernel names of `nsys stats --report gpukernsum:base` (written to PREFIX_gpukernsum_base.csv)."""
    copy = workdir / source.name
    shutil.copyfile(source, copy)
    prefix = workdir / "base"
    subprocess.run(
        [require_nsys(), "stats", "--report", "gpukernsum:base", "--format", "csv", "--force-export", "false", "--output", str(prefix), str(copy)],
        check=True,
        capture_output=True,
    )
    with open(f"{prefix}_gpukernsum_base.csv", newline="") as f:
        return {r["Name"] for r in csv.DictReader(f)}


@pytest.mark.slow  # real traces, nsys stats and the browser
@pytest.mark.parametrize("case", sorted(NSYS_EXPORTS))
def test_short_names_are_nsys_base_names(case, tmp_path):
    full = {r["Name"] for r in nsys_stats(NSYS_EXPORTS[case], "gpukernsum", tmp_path / "full")}
    base = _nsys_base_names(NSYS_EXPORTS[case], tmp_path)
    assert full and {short_name(n) for n in full} == base


def test_short_names_of_wrappers_and_plain_names():
    # cutlass's Kernel2 wrapper says nothing (nsys shows "Kernel2"): its first template argument names it.
    assert (
        short_name(
            "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8>"
            "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8::Params)"
        )
        == "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8"
    )
    for plain in ("aten::conv2d", "ProfilerStep#6", "Memcpy HtoD (Pageable -> Device)", "cudaLaunchKernel"):
        assert short_name(plain) == plain


def _tables(html: str) -> dict[str, str]:
    """Section id -> its table's HTML."""
    return dict(re.findall(r'<h2 id="(\w+)">.*?(<table>.*?</table>)', html, flags=re.S))


@pytest.mark.slow  # real traces, nsys stats and the browser
def test_kernel_names_are_short_full_on_hover_and_never_alike(reports):
    db, html_path = reports["vit"]
    html = html_path.read_text()
    assert "hover over a dotted name or a bar's label for the full name" in html
    names = {n for (n,) in duckdb.connect(str(db), read_only=True).execute("SELECT DISTINCT name FROM spans WHERE kind = 'kernel'").fetchall()}
    cutlass_gemms = {n for n in names if "cutlass_80_tensorop" in n}
    assert len(cutlass_gemms) >= 2  # the GEMMs that looked identical, cut to 35 characters
    for table_id, table in _tables(html).items():
        pairs = re.findall(r'<span class="short" title="([^"]*)">([^<]*)</span>', table)
        hovers = {}
        for full, shown in pairs:
            full, shown = (
                t.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").replace("&#x27;", "'").replace("&quot;", '"') for t in (full, shown)
            )
            assert len(shown) <= 48 and shown != full, (table_id, shown)
            hovers.setdefault(shown, set()).add(full)
        assert all(len(fulls) == 1 for fulls in hovers.values()), (table_id, hovers)
    kernel_table = _tables(html)["kernel_info"]
    shown_gemms = [s for f, s in re.findall(r'<span class="short" title="([^"]*)">([^<]*)</span>', kernel_table) if "cutlass_80_tensorop" in f]
    assert len(shown_gemms) == len(set(shown_gemms)) == len(cutlass_gemms)


@pytest.mark.slow  # real traces, nsys stats and the browser
def test_titles_say_what_per_inference_means(reports):
    assert _profiler_steps(VIT) == 1 and _profiler_steps(ALEXNET) == 0
    vit = reports["vit"][1].read_text()
    assert "Top kernels, ms per step (the trace&#x27;s only step); no metrics for a roofline" in vit
    assert "Per-inference numbers here, run 1: per step (the trace&#x27;s only step)." in vit
    alexnet = reports["alexnet"][1].read_text()
    assert "Top kernels, ms total over the trace (it has no steps)" in alexnet
    assert "critical path of the whole run (it has no steps)" in alexnet
    hand = reports["handmade"][1].read_text()
    # Layers come from the ML run's model ranges, kernels from the MLG run's.
    assert f"Layer latency: trimmed mean per inference, over {len(ML_MODEL_NS)} inferences" in hand
    assert f"tiny bs=2: per inference, over {len(MLG_MODEL_NS)} inferences" in hand
    plots = vit.split("<h2>Plots</h2>")[1].split("<h2 id=")[0]
    assert "per step" in plots and "per inference" not in plots


@pytest.mark.slow  # real traces, nsys stats and the browser
def test_ns_columns_are_ms_and_empty_analyses_one_list(reports):
    db, html_path = reports["vit"]
    html = html_path.read_text()
    gap = (
        duckdb.connect(str(db), read_only=True)
        .execute(
            "SELECT max(start_ns - busy_until) FROM (SELECT start_ns, max(end_ns) OVER (ORDER BY start_ns ROWS BETWEEN "
            "UNBOUNDED PRECEDING AND 1 PRECEDING) AS busy_until FROM spans WHERE kind IN ('kernel', 'memcpy', 'memset'))"
        )
        .fetchone()[0]
    )
    gaps = _tables(html)["gpu_idle_gaps"]
    assert '<th title="gap_ns (ns in the data)">gap (ms)</th>' in gaps
    assert f'<td class="num">{gap / 1e6:.3f}</td>' in gaps  # the longest gap between GPU operations
    absent = re.findall(r'<li id="(\w+)">', html.split('id="not-in-this-trace"')[1])
    sections = re.findall(r'<h2 id="(\w+)">', html)
    assert sorted(absent + sections) == sorted(a.name for a in ANALYSES)
    kernels = [e["name"] for e in _raw_events(VIT) if e.get("cat") == "kernel"]
    assert kernels and not any("nccl" in k.lower() for k in kernels) and "nccl_collectives" in absent
    assert "layer_latency" in absent and "kernel_info" in sections  # no layer ranges; kernels
    assert "(no rows)" not in html


@pytest.mark.slow  # real traces, nsys stats and the browser
def test_notes_in_a_users_words(reports):
    html = reports["vit"][1].read_text()
    notes = re.findall(r'<p class="note">(.*?)</p>', html)
    assert notes == [
        "Note: run 1 is a profiler trace, not a leveled capture (xsp-trace capture): its model and layer times include "
        "the profiler&#x27;s overhead on everything below them."
    ]


@pytest.fixture(scope="module")
def browser() -> str:
    """Debian's chromium (skipped where it is absent, unless CI or XSP_REQUIRE_BROWSER), checked
    before the reports are built."""
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(chromium):
        missing_browser("Debian's chromium is not installed")
    if not (HARNESS_DIR / "node_modules" / "playwright-core").is_dir():
        missing_browser("playwright-core is not installed in tests/perfetto_harness/node_modules")
    return chromium


@pytest.mark.slow  # real traces, nsys stats and the browser
@pytest.mark.parametrize("case", ["vit", "alexnet", "handmade"])
def test_report_in_headless_chromium_has_no_clipped_text(browser, reports, case):
    db, html = reports[case]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    full, top = ARTIFACTS / f"report_{case}_full.png", ARTIFACTS / f"report_{case}_top.png"
    sections = [f"kernel_info={ARTIFACTS / f'report_{case}_kernel_info.png'}"] if case == "vit" else []
    done = subprocess.run(
        [node_binary(), str(DOM_CHECK), str(html), str(full), str(top), *sections],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "CHROMIUM": browser},
    )
    assert done.returncode == 0, done.stderr
    page = json.loads(done.stdout)
    assert page["requests"] == []  # a self-contained file
    assert page["overflows"] == [] and page["overlaps"] == [] and page["wrapped"] == []
    assert page["pageWidth"] <= page["viewport"]  # wide tables scroll inside their box
    assert page["plots"]
    for plot in page["plots"]:
        assert len(plot["ticks"]) >= 3 and plot["units"], plot
        assert all(label["hover"] for label in plot["labels"]), plot
    names = {n for (n,) in duckdb.connect(str(db), read_only=True).execute("SELECT DISTINCT name FROM spans").fetchall()}
    assert all(s["hover"] in names and s["shown"] != s["hover"] for s in page["shortNames"])
    if case == "vit":
        assert len(page["shortNames"]) > 100
        kernel_bars = next(p for p in page["plots"] if p["title"].startswith("Top kernels"))
        pairs = {(label["shown"], label["hover"]) for label in kernel_bars["labels"]}
        assert len({s for s, _ in pairs}) == len({h for _, h in pairs}) == len(kernel_bars["labels"]) >= 10
    assert page["notes"], "no note"  # each report here has a plain trace
    red, green, _ = (int(v) for v in re.findall(r"\d+", page["notes"]["color"])[:3])
    assert not (red > 120 and red > green + 60)  # not the red of an error
    assert page["notes"]["background"] not in ("rgba(0, 0, 0, 0)", "transparent")
    assert "Not in this trace" in page["headings"]
    for shot in (full, top):
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
