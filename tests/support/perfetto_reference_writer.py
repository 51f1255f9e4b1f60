"""The exporter's slice writer as it was before the columnar encoder (xsp_trace/perfetto/
slice_encoder.py): one row at a time through the protobuf classes (PacketWriter.slice_begin)
and tracks.Lanes. Kept as the reference the columnar encoding must decode identically to."""

from __future__ import annotations

from collections.abc import Callable

from xsp_trace.naming import parse_layer_name
from xsp_trace.perfetto.export import PerfettoOptions, slice_parts
from xsp_trace.perfetto.slice_encoder import FLOAT_ANNOTATIONS, INT_ANNOTATIONS, STR_ANNOTATIONS
from xsp_trace.perfetto.slice_order import TRACK_KEY
from xsp_trace.perfetto.tracks import Lanes
from xsp_trace.resources import query_text
from xsp_trace.store.sql import set_variables

# perfetto/slices.sql sorted by DuckDB, as the query did before the encoder sorted each part
# itself (xsp_trace/perfetto/slice_order.py), with each row's track key joined back from its
# track hash (perfetto_span_tracks), the kernel and memop columns joined here from
# the kernels and memops tables (grid and block formatted here), each span's args gathered here
# from span_args and its flows joined from perfetto_flows: a reference independent of
# perfetto/slice_part_details.sql, slice_part_args.sql and slice_part_flows.sql.
_SORTED_SLICES = """
SELECT q.*, t.run_id, t.track_class, t.pid, t.tid, t.device_id, t.stream_id,
       CASE WHEN k.grid_x IS NOT NULL THEN format('[{{}}, {{}}, {{}}]', k.grid_x, k.grid_y, k.grid_z) END AS grid,
       CASE WHEN k.block_x IS NOT NULL THEN format('[{{}}, {{}}, {{}}]', k.block_x, k.block_y, k.block_z) END AS block,
       k.registers_per_thread, k.shared_mem_static_bytes, k.shared_mem_dynamic_bytes, k.occupancy_estimate,
       m.copy_kind, m.bytes, m.src_kind, m.dst_kind,
       a.args, o.flow_ids, f.flow_id AS terminating_flow_id
FROM ({query}) AS q
JOIN perfetto_span_tracks AS t ON t.track_hash = q.track_hash
LEFT JOIN kernels AS k ON k.run_id = t.run_id AND k.span_id = q.span_id
LEFT JOIN memops AS m ON m.run_id = t.run_id AND m.span_id = q.span_id
LEFT JOIN (SELECT run_id, span_id, list(struct_pack(key := key, value := value) ORDER BY key) AS args
           FROM span_args GROUP BY run_id, span_id) AS a ON a.run_id = t.run_id AND a.span_id = q.span_id
LEFT JOIN (SELECT run_id, api_span_id, list(flow_id ORDER BY flow_id) AS flow_ids FROM perfetto_flows GROUP BY ALL) AS o
    ON o.run_id = t.run_id AND o.api_span_id = q.span_id
LEFT JOIN perfetto_flows AS f ON f.run_id = t.run_id AND f.gpu_span_id = q.span_id
ORDER BY t.run_id, t.track_class = 'gpu', t.track_class, t.pid, t.tid, t.device_id, t.stream_id NULLS LAST, q.ts, q.span_end_ns DESC, q.depth, q.span_id
"""


def _all_parts(con, batch_rows: int):
    """perfetto/slices.sql over each run whole (one part per run), sorted by DuckDB, as one query gave it before."""
    query = _SORTED_SLICES.format(query=query_text("perfetto/slices").strip().rstrip(";"))
    for run_id, part_first, part_last in slice_parts(con, PerfettoOptions(part_rows=1 << 62)):
        set_variables(con, {"xsp_perfetto_part_run": run_id, "xsp_perfetto_part_first": part_first, "xsp_perfetto_part_last": part_last})
        for batch in con.sql(query).to_arrow_reader(batch_rows):
            yield {
                name: column.to_pylist() for name, column in zip(batch.schema.names, batch.columns, strict=True) if column.null_count < batch.num_rows
            }


def write_slices_per_row(con, writer, tracks, span_tracks, options, stats) -> None:
    """Drop-in for xsp_trace.perfetto.export._write_slices."""
    current_key = None
    lanes: Lanes | None = None
    place: Callable[[int, int], int]
    begin = writer.slice_begin
    for cols in _all_parts(con, options.batch_rows):
        n = len(cols["ts"])
        nulls = [None] * n
        keys = zip(*(cols.get(k, nulls) for k in TRACK_KEY), strict=True)
        int_cols = [(k, cols[k]) for k in INT_ANNOTATIONS if k in cols]
        str_cols = [(k, cols[k]) for k in STR_ANNOTATIONS if k in cols]
        float_cols = [(k, cols[k]) for k in FLOAT_ANNOTATIONS if k in cols]
        rows = zip(
            keys,
            cols["ts"],
            cols["end_ts"],
            cols["name"],
            cols["kind"],
            cols.get("args", nulls),
            cols.get("flow_ids", nulls),
            cols.get("terminating_flow_id", nulls),
            strict=True,
        )
        for i, (key, ts, end, name, kind, args, flow_ids, terminating) in enumerate(rows):
            if key != current_key:
                if lanes is not None:
                    lanes.close()
                lanes = Lanes(writer, tracks.base_track(*key), nest=key[1] != "gpu", new_lane=tracks.lane)
                place = lanes.place
                current_key = key
            uuid = place(ts, end)
            int_args = [(k, c[i]) for k, c in int_cols if c[i] is not None]
            str_args = [(k, c[i]) for k, c in str_cols if c[i] is not None]
            float_args = [(k, c[i]) for k, c in float_cols if c[i] is not None]
            if kind == "layer":
                parsed = parse_layer_name(name)
                if parsed is not None:
                    str_args += [("layer_name", parsed[1]), ("layer_type", parsed[2])]
            if args:
                str_args += [(a["key"], a["value"]) for a in args if a["value"] is not None]
            begin(uuid, ts, name, kind, int_args, str_args, float_args, flow_ids or (), () if terminating is None else (terminating,))
            stats.slices += 1
            if flow_ids:
                stats.flows += len(flow_ids)
    if lanes is not None:
        lanes.close()
