-- perfetto/slice_parts: the spans of an export cut into parts of about
-- getvariable('xsp_perfetto_part_rows') spans each -- per run, by start time -- so that the sort
-- of perfetto/slices.sql only ever holds one part; and the flow and span_args details of the
-- slices, built once for all parts.
--
-- From: perfetto_spans and perfetto_runs (queries/perfetto/select.sql), launches, span_args.
-- Creates TEMP TABLEs perfetto_flows, perfetto_outgoing_flows and perfetto_span_args, read by
-- perfetto/slices.sql.
-- Flows: one per launches row whose API span and GPU span are both selected; its id is
-- run_id * 2^40 + gpu_span_id, unique in the trace (span ids stay below 2^40).

CREATE OR REPLACE TEMP TABLE perfetto_flows AS
SELECT
    -- Run of the launch.
    l.run_id,
    -- The launching API call: the flow starts on its slice.
    l.api_span_id,
    -- The GPU work: the flow ends on its slice.
    l.gpu_span_id,
    -- The flow id.
    l.run_id::BIGINT * 1099511627776 + l.gpu_span_id AS flow_id
FROM launches AS l
JOIN perfetto_spans AS api ON api.run_id = l.run_id AND api.span_id = l.api_span_id
JOIN perfetto_spans AS gpu ON gpu.run_id = l.run_id AND gpu.span_id = l.gpu_span_id;

CREATE OR REPLACE TEMP TABLE perfetto_outgoing_flows AS
SELECT
    -- Run of the API call.
    run_id,
    -- The API call.
    api_span_id AS span_id,
    -- The flows it starts, by id.
    list(flow_id ORDER BY flow_id) AS flow_ids
FROM perfetto_flows
GROUP BY run_id, api_span_id;

CREATE OR REPLACE TEMP TABLE perfetto_span_args AS
SELECT
    -- Run of the span.
    a.run_id,
    -- The span.
    a.span_id,
    -- Its source details as a list of {key, value}, by key.
    list(struct_pack(key := a.key, value := a.value) ORDER BY a.key) AS args
FROM span_args AS a
WHERE a.run_id IN (SELECT run_id FROM perfetto_runs)
GROUP BY a.run_id, a.span_id;

WITH
    per_run AS (
        SELECT run_id, count(*) AS n,
               greatest(1, ceil(count(*) / getvariable('xsp_perfetto_part_rows')))::INTEGER AS parts,
               approx_quantile(start_ns, [i / 64 FOR i IN range(1, 64)]::FLOAT[]) AS cuts
        FROM perfetto_spans GROUP BY run_id
    ),
    cuts AS (
        -- Cut points spread evenly over the run's start times (approximate quantiles: any
        -- increasing cuts are correct, even ones only make the parts about equal).
        SELECT run_id, list_distinct([cuts[greatest(1, least(63, round(64.0 * i / parts)::INTEGER))] FOR i IN range(1, parts)]) AS points
        FROM per_run
    ),
    bounds AS (
        SELECT run_id, list_prepend(NULL, list_sort(points)) AS starts, list_append(list_sort(points), NULL) AS ends FROM cuts
    )
SELECT
    -- Run of the part.
    run_id,
    -- First start time (ns, the run's clock) of the part's spans; NULL: open.
    unnest(starts) AS part_from,
    -- Start time (ns, the run's clock) the part's spans start before; NULL: open.
    unnest(ends) AS part_to
FROM bounds
ORDER BY run_id, part_from NULLS FIRST;
