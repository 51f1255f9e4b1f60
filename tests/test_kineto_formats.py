"""Every Kineto era converts into the same schema: exact times, kinds, metadata, side tables."""

from __future__ import annotations

import gzip
from decimal import ROUND_HALF_UP, Decimal

import pytest

from kineto_cases import KINETO_TRACES, load_raw
from xsp_trace.convert import ConvertOptions, convert_files

pytestmark = pytest.mark.slow  # real traces

# (case, schemaVersion, rank, clock origin, vendor) from each file's own metadata.
METADATA = [
    ("kineto_2021_format", None, 1, 0, "nvidia"),
    ("kineto_2022_integer_us_rank3", "1", 3, 0, "nvidia"),
    ("kineto_2024_ns_resolution", "1", 0, 0, "nvidia"),
    ("kineto_nccl_collectives", "1", 0, 1711964646000000000, "nvidia"),
    ("kineto_rocm_mi250", "1", None, 1735632360000000000, "amd"),
    ("kineto_cpu_only", "1", 34, 1719853884000000000, None),
    ("kineto_2025_all_options_h100", "1", None, 1751410836000000000, "nvidia"),
    ("kineto_relative_ts_b200", "1", 0, 1767189312000000000, "nvidia"),
]


@pytest.mark.parametrize("case,version,rank,origin,vendor", METADATA)
def test_run_metadata_from_head_or_tail(case, version, rank, origin, vendor, converted):
    """Metadata keys are read wherever the file puts them (2021 and 2025 traces put them after the events)."""
    db = converted(KINETO_TRACES[case])
    row = db.execute("SELECT source_kind, tool, source_format_version, rank, clock_origin_utc_ns FROM runs").fetchone()
    assert row == ("kineto", "torch.profiler", version, rank, origin)
    raw = load_raw(KINETO_TRACES[case])
    props = raw.get("deviceProperties", [])
    devices = db.execute("SELECT device_id, name, sm_count, memory_bytes, compute_major, vendor FROM devices ORDER BY 1").fetchall()
    for prop in props:
        assert (prop["id"], prop["name"], prop["numSms"], prop["totalGlobalMem"], prop["computeMajor"]) in [d[:5] for d in devices]
    if vendor:
        assert {d[5] for d in devices} == {vendor}
    else:
        assert devices == []


@pytest.mark.parametrize("case", list(KINETO_TRACES))
def test_every_complete_event_has_exact_integer_ns(case, converted):
    """start/end are the decimal µs text times 1000, rounded half away from zero: no float drift."""
    raw = load_raw(KINETO_TRACES[case])
    kept = {
        "cpu_op",
        "user_annotation",
        "gpu_user_annotation",
        "cuda_runtime",
        "cuda_driver",
        "kernel",
        "gpu_memcpy",
        "gpu_memset",
        "cuda_sync",
        "Kernel",
        "Runtime",
        "overhead",
    }
    expected = sorted((e["name"], _ns(e["ts"]), _ns(e["ts"] + e["dur"])) for e in raw["traceEvents"] if e.get("ph") == "X" and e.get("cat") in kept)
    got = sorted(converted(KINETO_TRACES[case]).execute("SELECT name, start_ns, end_ns FROM spans").fetchall())
    assert got == expected


def _ns(us) -> int:
    return int((Decimal(us) * 1000).to_integral_value(rounding=ROUND_HALF_UP))


def test_kinds_categories_and_gpu_placement(converted):
    db = converted(KINETO_TRACES["kineto_cuda_sync_alexnet"])
    kinds = dict(db.execute("SELECT category, string_agg(DISTINCT kind) FROM spans GROUP BY 1").fetchall())
    assert kinds == {
        "user_annotation": "annotation",
        "cpu_op": "op",
        "cuda_runtime": "api",
        "kernel": "kernel",
        "gpu_memcpy": "memcpy",
        "gpu_memset": "memset",
        "cuda_sync": "sync",
    }
    # GPU spans: no thread, the device and stream, and the host pid (not Kineto's device pid 0).
    bad = db.execute("""SELECT count(*) FROM spans WHERE kind IN ('kernel', 'memcpy', 'memset', 'sync')
                        AND (tid IS NOT NULL OR device_id <> 0 OR pid <> 2869224)""").fetchone()[0]
    assert bad == 0
    streams = db.execute("SELECT DISTINCT stream_id FROM spans WHERE kind = 'sync' ORDER BY 1 NULLS LAST").fetchall()
    assert streams == [(7,), (20,), (None,)]  # Context Sync is device-wide (stream 4294967295)
    assert db.execute("SELECT count(*) FROM spans WHERE tid IS NOT NULL AND (device_id IS NOT NULL OR stream_id IS NOT NULL)").fetchone()[0] == 0


def test_kernel_and_memop_details(converted):
    db = converted(KINETO_TRACES["kineto_2025_all_options_h100"])
    row = db.execute("""SELECT grid_x, grid_y, grid_z, block_x, block_y, block_z, registers_per_thread, shared_mem_bytes,
                               blocks_per_sm, warps_per_sm, occupancy_estimate
                        FROM kernels k JOIN spans s USING (run_id, span_id)
                        WHERE s.name LIKE 'sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64%' AND s.correlation_id = 675811""").fetchone()
    assert row == (132, 1, 1, 384, 1, 1, 168, 231424, 1.0, 12.0, 0.0)
    memcpy = db.execute(
        "SELECT copy_kind, src_kind, dst_kind, bytes FROM memops m JOIN spans s USING (run_id, span_id) WHERE s.kind = 'memcpy'"
    ).fetchall()
    assert memcpy == [("DtoH", "Device", "Pinned", 1)]
    assert db.execute(
        "SELECT count(*), sum(bytes) FILTER (WHERE bytes = 4) > 0 FROM memops m JOIN spans s USING (run_id, span_id) WHERE s.kind = 'memset'"
    ).fetchone() == (241, True)
    # Shapes and dtypes of ops stay as span_args, JSON text for lists.
    args = dict(
        db.execute("""SELECT key, value FROM span_args WHERE span_id =
                                  (SELECT arg_min(span_id, start_ns) FROM spans WHERE name = 'aten::embedding')""").fetchall()
    )
    assert args["Input Dims"].startswith("[[151936,1024],[16,559]")
    assert args["Input type"] == '["c10::BFloat16","long int","Scalar","Scalar","Scalar"]'


def test_rocm_launch_configuration_comes_from_the_hip_call(converted):
    db = converted(KINETO_TRACES["kineto_rocm_mi250"])
    missing = db.execute("SELECT count(*) FROM kernels WHERE grid_x IS NULL OR block_x IS NULL").fetchone()[0]
    assert missing == 0
    assert db.execute("SELECT DISTINCT device_id FROM spans WHERE kind = 'kernel'").fetchall() == [(2,)]
    devices = dict(db.execute("SELECT device_id, name FROM devices").fetchall())
    assert devices[2] == "AMD Radeon Graphics" and len(devices) == len(load_raw(KINETO_TRACES["kineto_rocm_mi250"])["deviceProperties"])


def test_collective_fields_kept(converted):
    db = converted(KINETO_TRACES["kineto_nccl_collectives"])
    keys = {
        k
        for (k,) in db.execute("""SELECT DISTINCT key FROM span_args a JOIN spans s USING (run_id, span_id)
                                         WHERE s.kind = 'kernel' AND s.name LIKE 'ncclKernel%'""").fetchall()
    }
    assert {"Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype", "Process Group Ranks"} <= keys


def test_profiler_steps_number_iterations(converted):
    db = converted(KINETO_TRACES["kineto_2022_integer_us_rank3"])
    steps = db.execute("SELECT name, iteration FROM spans WHERE name LIKE 'ProfilerStep#%' ORDER BY start_ns").fetchall()
    assert steps and all(int(name.split("#")[1]) == it for name, it in steps)
    # Kernels inherit the step their launch ran in.
    per_step = db.execute(
        "SELECT count(DISTINCT iteration), count(*) FILTER (WHERE iteration IS NULL) FROM spans s JOIN launches l ON l.run_id = s.run_id AND l.gpu_span_id = s.span_id"
    ).fetchone()
    assert per_step[0] == len({it for _, it in steps})


def test_memory_events_become_counters_and_python_functions_are_optional(converted, tmp_path):
    path = KINETO_TRACES["kineto_2025_all_options_h100"]
    db = converted(path)
    counters = dict(db.execute("SELECT name, count(*) FROM counters GROUP BY 1").fetchall())
    assert counters == {"Total Allocated": 2450, "Total Reserved": 2450}
    assert db.execute("SELECT count(*) FROM spans WHERE category = 'python_function'").fetchone()[0] == 0
    out = tmp_path / "with_python.duckdb"
    convert_files([path], out, ConvertOptions(include_python_functions=True))
    import duckdb

    with duckdb.connect(str(out), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM spans WHERE category = 'python_function'").fetchone()[0] == 4262


def test_plain_json_converts_like_gzip(converted, tmp_path):
    plain = tmp_path / "trace.json"
    plain.write_bytes(gzip.open(KINETO_TRACES["kineto_rocm_mi250"]).read())
    sql = "SELECT kind, name, start_ns, end_ns, pid, tid, device_id, stream_id, correlation_id FROM spans ORDER BY span_id"
    assert converted(plain).execute(sql).fetchall() == converted(KINETO_TRACES["kineto_rocm_mi250"]).execute(sql).fetchall()
