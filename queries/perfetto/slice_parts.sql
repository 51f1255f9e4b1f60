-- perfetto/slice_parts: the spans of an export cut into parts of about
-- getvariable('xsp_perfetto_part_rows') rows of spans and their args each -- per run, by start
-- time -- so that only one part is held and sorted at a time; and the details the slices join (flows, kernel and memop
-- columns, span_args, phases), built once for all parts, each beside its span's start time and
-- ordered by it, so that a part reads only its own rows of them (perfetto/slices.sql filters
-- them by the part's start range: zone maps skip the rest, and no part joins a whole table).
-- The span_args rows are laid out the same way by perfetto/slice_args.sql.
--
-- From: perfetto_spans and perfetto_runs (queries/perfetto/select.sql), launches, kernels,
-- memops, attribution.
-- Creates TEMP TABLEs perfetto_flows, perfetto_outgoing_flows, perfetto_kernels,
-- perfetto_memops and perfetto_phases, read by perfetto/slices.sql, slice_part_flows.sql and
-- slice_part_details.sql (and the variable
-- xsp_perfetto_any_phase: whether any selected run's attribution names a phase).
-- Flows: one per launches row whose API span and GPU span are both selected; its id is
-- run_id * 2^40 + gpu_span_id, unique in the trace (span ids stay below 2^40).

CREATE OR REPLACE TEMP TABLE perfetto_flows AS
SELECT
    -- Run of the launch.
    l.run_id,
    -- The launching API call: the flow starts on its slice.
    l.api_span_id,
    -- Start of the API call (run clock).
    api.start_ns AS api_start_ns,
    -- The GPU work: the flow ends on its slice.
    l.gpu_span_id,
    -- Start of the GPU work (run clock).
    gpu.start_ns AS gpu_start_ns,
    -- The flow id.
    l.run_id::BIGINT * 1099511627776 + l.gpu_span_id AS flow_id
FROM launches AS l
JOIN perfetto_spans AS api ON api.run_id = l.run_id AND api.span_id = l.api_span_id
JOIN perfetto_spans AS gpu ON gpu.run_id = l.run_id AND gpu.span_id = l.gpu_span_id
ORDER BY l.run_id, gpu.start_ns;

-- The same flows beside the start of their API call, so that a part finds the flows its API calls
-- start through its own start range too.
CREATE OR REPLACE TEMP TABLE perfetto_outgoing_flows AS
SELECT
    -- Run of the API call.
    run_id,
    -- Start of the API call (run clock).
    api_start_ns AS start_ns,
    -- The API call.
    api_span_id AS span_id,
    -- A flow it starts.
    flow_id
FROM perfetto_flows
ORDER BY run_id, start_ns;

CREATE OR REPLACE TEMP TABLE perfetto_kernels AS
SELECT
    -- Run of the kernel.
    s.run_id,
    -- Start of the kernel (run clock).
    s.start_ns,
    -- The kernel's span.
    k.span_id,
    -- Kernel grid as shown, "[x, y, z]" (NULL if a dimension is unknown).
    '[' || k.grid_x || ', ' || k.grid_y || ', ' || k.grid_z || ']' AS grid,
    -- Kernel block as shown, "[x, y, z]".
    '[' || k.block_x || ', ' || k.block_y || ', ' || k.block_z || ']' AS block,
    -- Registers per thread.
    k.registers_per_thread,
    -- Static and dynamic shared memory per block, bytes.
    k.shared_mem_static_bytes, k.shared_mem_dynamic_bytes,
    -- Profiler-estimated occupancy, 0..1.
    k.occupancy_estimate
FROM kernels AS k
JOIN perfetto_spans AS s ON s.run_id = k.run_id AND s.span_id = k.span_id
ORDER BY s.run_id, s.start_ns;

CREATE OR REPLACE TEMP TABLE perfetto_memops AS
SELECT
    -- Run of the copy or set.
    s.run_id,
    -- Its start (run clock).
    s.start_ns,
    -- Its span.
    m.span_id,
    -- Direction of a copy.
    m.copy_kind,
    -- Bytes copied or set.
    m.bytes,
    -- Memory kinds of a copy's source and destination.
    m.src_kind, m.dst_kind
FROM memops AS m
JOIN perfetto_spans AS s ON s.run_id = m.run_id AND s.span_id = m.span_id
ORDER BY s.run_id, s.start_ns;

-- Whether any span is charged to a phase: most traces have none (nsys, inference), and the join
-- below would still hash every span to find that out; a constant here
-- lets the planner drop it.
SET VARIABLE xsp_perfetto_any_phase = (SELECT count(*) > 0 FROM attribution WHERE phase IS NOT NULL);

-- (only the rows with a phase: a hash table of every span's attribution row costs more than the rest of the join)
CREATE OR REPLACE TEMP TABLE perfetto_phases AS
SELECT
    -- Run of the span.
    s.run_id,
    -- Start of the span (run clock).
    s.start_ns,
    -- The span.
    a.span_id,
    -- Training phase it is charged to.
    a.phase
FROM attribution AS a
JOIN perfetto_spans AS s ON s.run_id = a.run_id AND s.span_id = a.span_id
WHERE a.phase IS NOT NULL AND getvariable('xsp_perfetto_any_phase')
ORDER BY s.run_id, s.start_ns;

WITH
    arg_rows AS (
        SELECT run_id, count(*) AS n FROM perfetto_span_args GROUP BY run_id
    ),
    extent AS (
        SELECT run_id, count(*) AS n, min(start_ns) AS lo, max(start_ns)::HUGEINT - min(start_ns) + 1 AS width
        FROM perfetto_spans GROUP BY run_id
    ),
    per_run AS (
        -- A part holds about xsp_perfetto_part_rows rows of spans and their args together: a
        -- Kineto trace's args (a few per op) outnumber its spans, and a part gathers them into lists.
        SELECT e.*, 65536 AS buckets, e.width * buckets <= 9223372036854775807 AS bigint_buckets, greatest(1, ceil((e.n + coalesce(a.n, 0)) / getvariable('xsp_perfetto_part_rows')))::INTEGER AS parts
        FROM extent AS e LEFT JOIN arg_rows AS a ON a.run_id = e.run_id
    ),
    buckets AS (
        -- Spans per bucket of start times (per_run.buckets equal widths). Counting, not quantiles:
        -- exact quantiles hold every start time in memory, approximate ones differ from run to
        -- run (parallel merges), and so would the trace's bytes. In BIGINT where the product fits (runs
        -- shorter than 2^47 ns, 39 hours): HUGEINT arithmetic on every span would dominate this query.
        SELECT s.run_id,
               CASE WHEN r.bigint_buckets THEN (s.start_ns - r.lo) * r.buckets // r.width::BIGINT
                    ELSE ((s.start_ns - r.lo)::HUGEINT * r.buckets // r.width)::BIGINT END AS bucket,
               count(*) AS c
        FROM perfetto_spans AS s JOIN per_run AS r ON r.run_id = s.run_id
        WHERE r.parts > 1
        GROUP BY ALL
    ),
    running AS (
        SELECT run_id, bucket, sum(c) OVER w AS upto, sum(c) OVER w - c AS before
        FROM buckets WINDOW w AS (PARTITION BY run_id ORDER BY bucket)
    ),
    cuts AS (
        -- A cut after each bucket where the running count passes a multiple of n / parts: at the
        -- first start time of the next bucket (any increasing cuts are correct; these make the
        -- parts about equal).
        SELECT r.run_id, list(DISTINCT p.lo + ((r.bucket + 1) * p.width + p.buckets - 1) // p.buckets) AS points
        FROM running AS r JOIN per_run AS p ON p.run_id = r.run_id
        WHERE r.upto < p.n AND (r.upto * p.parts) // p.n > (r.before * p.parts) // p.n
        GROUP BY r.run_id
    ),
    bounds AS (
        -- Open ends as the extremes of BIGINT: the bounds stay plain constants that the scans of
        -- perfetto/slices.sql can use to skip (a NULL bound would need coalesce, which they cannot).
        SELECT run_id,
               list_prepend(-9223372036854775808, list_sort(coalesce(points, []))) AS starts,
               list_append([p - 1 FOR p IN list_sort(coalesce(points, []))], 9223372036854775807) AS lasts
        FROM per_run LEFT JOIN cuts USING (run_id)
    )
SELECT
    -- Run of the part.
    run_id,
    -- First start time (ns, the run's clock) of the part's spans.
    unnest(starts)::BIGINT AS part_first,
    -- Last start time (ns, the run's clock, inclusive) of the part's spans.
    unnest(lasts)::BIGINT AS part_last
FROM bounds
ORDER BY run_id, part_first;
