-- perfetto/slice_part_flows: the flows of one part of the slices, one row per flow end in the
-- part: on the API call that launched GPU work (it starts the flow) and on that GPU work (it
-- terminates it), unsorted -- xsp_trace/perfetto/slice_order.py places each beside its span's row.
-- A query of its own, not joined in perfetto/slices.sql: most spans are neither, and a list column
-- and an id column NULL for them went through the part's joins, result and batches.
--
-- From: perfetto_flows and perfetto_outgoing_flows (queries/perfetto/slice_parts.sql), each read
-- through the part's start range as in perfetto/slices.sql: run getvariable('xsp_perfetto_part_run'),
-- span start in [xsp_perfetto_part_first, xsp_perfetto_part_last].
SELECT
    -- The span (perfetto/slices.span_id of the same part).
    span_id,
    -- The flow id.
    flow_id,
    -- Whether the span starts the flow (an API call), else terminates it (GPU work).
    true AS outgoing
FROM perfetto_outgoing_flows
WHERE run_id = getvariable('xsp_perfetto_part_run')
  AND start_ns BETWEEN getvariable('xsp_perfetto_part_first') AND getvariable('xsp_perfetto_part_last')
UNION ALL
SELECT gpu_span_id, flow_id, false
FROM perfetto_flows
WHERE run_id = getvariable('xsp_perfetto_part_run')
  AND gpu_start_ns BETWEEN getvariable('xsp_perfetto_part_first') AND getvariable('xsp_perfetto_part_last');
