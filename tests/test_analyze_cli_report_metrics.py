"""`xsp-trace analyze` and `xsp-trace metrics` in-process, the ncu CSV reader, and the HTML report
rendered by headless chromium (its screenshot must show the plots)."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from support.leveled import build
from xsp_trace.analyze.report import svg
from xsp_trace.analyze.session import open_session, run_analysis
from xsp_trace.cli import app
from xsp_trace.convert.ncu import derived_metrics, parse_ncu_csv

NCU_CSV = Path(__file__).parent / "data" / "ncu_handmade" / "tiny_mlg_raw.csv"
runner = CliRunner()


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return build(tmp_path_factory.mktemp("cli") / "hand.duckdb")


def test_analyze_json_and_csv(db):
    result = runner.invoke(app, ["analyze", str(db), "-a", "layer_gpu_vs_nongpu", "-a", "model_info", "--format", "json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert [r["non_gpu_latency_ms"] for r in payload["layer_gpu_vs_nongpu"]] == [28e-6, 15e-6]
    assert payload["model_info"][0]["latency_ms"] == 105e-6
    result = runner.invoke(app, ["analyze", str(db), "-a", "layer_type_distribution", "--format", "csv"])
    assert result.exit_code == 0
    assert result.output.splitlines() == [
        "experiment,layer_type,layers,layers_pct,calls_per_inference",
        "tiny bs=2,Conv2d,1,50.0,1",
        "tiny bs=2,ReLU,1,50.0,2",
    ]


def test_analyze_table_names_uncorrected_levels(db):
    result = runner.invoke(app, ["analyze", str(db), "--run", "3", "-a", "model_info"])
    assert result.exit_code == 0, result.output
    assert "model level uncorrected: from the MLG run" in result.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["-a", "no_such_analysis"], "unknown analysis no_such_analysis"),
        (["--run", "99"], "has no run 99"),
        (["--compare", "1"], "needs two run ids"),
    ],
)
def test_analyze_bad_input_is_one_line_exit_2(db, args, message):
    result = runner.invoke(app, ["analyze", str(db), *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_ncu_raw_csv_units_and_derived_metrics():
    launches = parse_ncu_csv(NCU_CSV.read_text(), NCU_CSV)
    assert [launch.launch_id for launch in launches] == list(range(12))
    conv = launches[0]
    assert conv.kernel_name.startswith("void conv_kernel<float, 3>(")
    assert conv.metrics["dram__bytes_read.sum"] == (100.0, "byte")  # 0.10 Kbyte
    assert conv.metrics["gpu__time_duration.sum"] == (10.0, "nsecond")  # 0.01 usecond
    assert conv.metrics["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"] == (1000.0, "inst")  # "1,000"
    # FLOPs = fadd + fmul + 2 * ffma; occupancy percent -> fraction.
    assert derived_metrics(conv.metrics) == {
        "xsp.flops": (4000.0, "flop"),
        "xsp.dram_read_bytes": (100.0, "byte"),
        "xsp.dram_write_bytes": (100.0, "byte"),
        "xsp.achieved_occupancy": (0.5, "fraction"),
    }


def test_ncu_details_page_long_form():
    text = (
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
        '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
        '"0","1","app","h","k(int*)","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics",'
        '"dram__bytes_write.sum","Mbyte","1.50"\n'
        '"0","1","app","h","k(int*)","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics",'
        '"flop_count_sp","","2,048"\n'
    )
    (launch,) = parse_ncu_csv(text, Path("x.csv"))
    assert launch.metrics == {"dram__bytes_write.sum": (1.5e6, "byte"), "flop_count_sp": (2048.0, "")}
    assert derived_metrics(launch.metrics)["xsp.flops"] == (2048.0, "flop")


def test_metrics_command_matches_launches_to_the_mlg_run(tmp_path):
    db = build(tmp_path / "nometrics.duckdb", with_metrics=False)
    before = open_session(db)
    assert run_analysis(before, "kernel_roofline").rows == []
    before.close()
    result = runner.invoke(app, ["metrics", str(db), str(NCU_CSV), "--run", "3"])
    assert result.exit_code == 0, result.output
    assert "12 of 12 launches matched to kernels of run 3 (by base_name)" in result.output
    after = open_session(db)
    rows = [
        (r["name"], r["flops"], r["dram_read_bytes"], r["dram_write_bytes"], r["achieved_occupancy"], r["memory_bound"])
        for r in run_analysis(after, "kernel_info").records()
        if r["experiment"] == "tiny bs=2"
    ]
    # the same per-inference numbers as the hand-written metrics of tests/support/leveled.py
    assert rows == [
        ("conv_kernel", 4000.0, 100.0, 100.0, 0.5, False),
        ("relu_kernel", 16.0, 128.0, 128.0, 0.75, True),
        ("bias_kernel", 10.0, 40.0, 40.0, 0.25, True),
    ]


def test_metrics_command_bad_input(tmp_path, db):
    missing = runner.invoke(app, ["metrics", str(tmp_path / "none.duckdb"), str(NCU_CSV)])
    assert missing.exit_code == 2 and "does not exist" in missing.output
    not_csv = tmp_path / "x.csv"
    not_csv.write_text("==PROF== nothing profiled\n")
    result = runner.invoke(app, ["metrics", str(db), str(not_csv), "--run", "3"])
    assert result.exit_code == 2 and "no ncu CSV header" in result.output


def _png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Rows of RGB(A) pixels of an 8-bit non-interlaced PNG (what chromium writes)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        chunk = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            assert depth == 8 and interlace == 0 and color in (2, 6)
            bpp = 4 if color == 6 else 3
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, bpp, rows


def _count_color(rows: list[bytes], bpp: int, hex_color: str) -> int:
    target = bytes.fromhex(hex_color.lstrip("#"))
    return sum(sum(1 for i in range(0, len(r), bpp) if r[i : i + 3] == target) for r in rows)


def _report(db, tmp_path):
    report = tmp_path / "report.html"
    result = runner.invoke(app, ["analyze", str(db), "-a", "model_info", "--report", str(report)])
    assert result.exit_code == 0, result.output
    return report


def test_the_report_is_one_self_contained_file(db, tmp_path):
    html = _report(db, tmp_path).read_text()
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert html.count("<svg") >= 3  # the roofline, the layer bars and the GPU / non-GPU split


@pytest.mark.slow
def test_report_opens_in_headless_chromium_and_shows_its_plots(db, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.fail("chromium is not installed: .ci/install-report.sh installs it")
    report = _report(db, tmp_path)
    shot = tmp_path / "report.png"
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1400,2200",
            f"--screenshot={shot}",
            report.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    width, bpp, rows = _png_pixels(shot)
    assert width == 1400
    # Below the findings: the roofline's roof, the layer bars and the GPU / non-GPU split are painted.
    assert _count_color(rows, bpp, svg.ROOF_COLOR) > 200
    assert _count_color(rows, bpp, svg.BAR_COLOR) > 500
    assert _count_color(rows, bpp, svg.GPU_COLOR) > 100 and _count_color(rows, bpp, svg.NON_GPU_COLOR) > 100


def test_analyze_list_needs_no_database():
    result = runner.invoke(app, ["analyze", "--list"])
    assert result.exit_code == 0, result.output
    assert "model_info" in result.output and "queries/analyses/model_info.sql" in result.output
    result = runner.invoke(app, ["analyze"])
    assert result.exit_code == 2 and "no database given" in result.output


def test_analyze_limit_applies_to_csv_and_json(db):
    result = runner.invoke(app, ["analyze", str(db), "-a", "layer_type_distribution", "--format", "csv", "--limit", "1"])
    assert result.output.splitlines() == ["experiment,layer_type,layers,layers_pct,calls_per_inference", "tiny bs=2,Conv2d,1,50.0,1"]
    result = runner.invoke(app, ["analyze", str(db), "-a", "layer_type_distribution", "--format", "json", "--limit", "1"])
    assert [r["layer_type"] for r in json.loads(result.output)["layer_type_distribution"]] == ["Conv2d"]
    result = runner.invoke(app, ["analyze", str(db), "-a", "layer_type_distribution", "--format", "xml"])
    assert result.exit_code == 2


def test_experiments_sort_by_batch_size_as_a_number(db, tmp_path):
    """The hand-made experiment copied at batch sizes 16 and 4: model_info lists bs=2, bs=4, bs=16."""
    import duckdb

    copy = tmp_path / "three.duckdb"
    shutil.copy(db, copy)
    con = duckdb.connect(str(copy))
    tables = [
        t
        for (t,) in con.execute(
            "SELECT DISTINCT table_name FROM duckdb_columns() WHERE column_name = 'run_id' AND NOT internal AND schema_name = 'main'"
        ).fetchall()
    ]
    for offset, batch in ((100, 16), (200, 4)):
        for table in tables:
            replace = f"run_id + {offset} AS run_id" + (f", {batch} AS batch_size" if table == "runs" else "")
            con.execute(f'INSERT INTO "{table}" SELECT * REPLACE ({replace}) FROM "{table}" WHERE run_id < 100')
    con.close()
    session = open_session(copy)
    experiments = [r["experiment"] for r in run_analysis(session, "model_info").records()]
    assert experiments == ["tiny bs=2", "tiny bs=4", "tiny bs=16"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["analyze", "DB", "--run", "1,x"], "--run 'x' is not a number (e.g. --run 1,2)"),
        (["analyze", "DB", "--compare", "a,b"], "--compare 'a' is not a number"),
        (["perfetto", "DB", "-o", "out.pftrace", "--runs", "1,two"], "--runs 'two' is not a number"),
        (["capture", "--batch-sizes", "1,big", "-o", "run", "--", "python", "x.py"], "--batch-sizes 'big' is not a number (e.g. --batch-sizes 1,8)"),
    ],
)
def test_every_list_option_is_parsed_alike(db, tmp_path, args, message):
    """One parser for every comma-separated option: the same one-line error, exit 2."""
    result = runner.invoke(app, [str(db) if a == "DB" else str(tmp_path / a) if a in ("out.pftrace", "run") else a for a in args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
