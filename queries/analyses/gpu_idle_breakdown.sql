-- analyses/gpu_idle_breakdown: why each GPU stream sat idle, per step -- Holistic Trace Analysis
-- 0.5's idle-time breakdown (TraceAnalysis.get_idle_time_breakdown) per run, GPU, stream and step.
-- On one stream every operation after the first ends a gap: its start minus the end of the
-- stream's previous operation (in start order; HTA sums a negative one too). The gap is
--   host_wait    when the call that launched the operation started after the previous one ended
--                (the CPU had not queued it yet: HTA's "host wait");
--   kernel_wait  otherwise, when the gap is shorter than the variable xsp_kernel_wait_ns (default
--                30000 ns: HTA's consecutive_kernel_delay=30, which its docstring calls ns but
--                compares with its µs timestamps), the delay between back-to-back launches;
--   other        otherwise: the work was queued and the stream waited on something else (another
--                stream, an event, a collective).
-- A gap belongs to the step of the operation that ends it (attribution: the step of its launching
-- call); the per-stream row adds up every gap of the stream, as HTA reports it (a run without
-- steps has only that row).
--
-- From: the GPU work (lib/gpu_work: kernels, copies, sets with their stream), launches and spans
-- (the launching call's start), attribution and steps (the step). HTA's per-rank figures are the
-- per-stream rows of the rank's run (HTA does not tell GPUs apart within a rank).
-- Counts: every kernel, copy and set the session holds -- under `analyze --scope all` (the
-- default) all of the trace's, also work launched before the trace started (no launching call in
-- it: never host_wait) or after its last step; under --scope profiled only work launched in the
-- profiled steps, as HTA 0.5 counts with include_last_profiler_step=True (lib/scope.sql says which
-- work that leaves out; HTA's default also drops the work launched in the last step).
--
-- title: GPU idle time per stream and step: host wait, kernel wait, other (HTA)
-- group: gpu
-- include: lib/gpu_work
-- columns: run_id INTEGER, device_id INTEGER, stream_id BIGINT, per VARCHAR, iteration INTEGER, gaps BIGINT,
--     idle_ns HUGEINT, host_wait_ns HUGEINT, kernel_wait_ns HUGEINT, other_ns HUGEINT, host_wait_pct DOUBLE,
--     kernel_wait_pct DOUBLE, other_pct DOUBLE
WITH ops AS (
    SELECT w.run_id, w.device_id, w.stream_id, w.span_id, w.start_ns, w.end_ns,
           min(a.start_ns) AS launch_start_ns, any_value(att.step_span_id) AS step_span_id
    FROM xsp_gpu_work AS w
    LEFT JOIN launches AS l ON l.run_id = w.run_id AND l.gpu_span_id = w.span_id
    LEFT JOIN spans AS a ON a.run_id = l.run_id AND a.span_id = l.api_span_id
    LEFT JOIN attribution AS att ON att.run_id = w.run_id AND att.span_id = w.span_id
    GROUP BY ALL
), gaps AS (
    SELECT run_id, device_id, stream_id, step_span_id, launch_start_ns,
           start_ns - lag(end_ns) OVER w AS gap_ns,
           launch_start_ns > lag(end_ns) OVER w AS host_late
    FROM ops
    WINDOW w AS (PARTITION BY run_id, device_id, stream_id ORDER BY start_ns, end_ns, span_id)
), classed AS (
    SELECT g.run_id, g.device_id, g.stream_id, st.iteration, g.gap_ns,
           CASE WHEN g.gap_ns IS NULL THEN NULL  -- the stream's first operation ends no gap
                WHEN g.host_late THEN 'host_wait'
                WHEN g.gap_ns < coalesce(getvariable('xsp_kernel_wait_ns'), 30000) THEN 'kernel_wait'
                ELSE 'other' END AS category
    FROM gaps AS g
    LEFT JOIN steps AS st ON st.run_id = g.run_id AND st.step_span_id = g.step_span_id
), totals AS (
    SELECT run_id, device_id, stream_id,
           CASE WHEN grouping(iteration) = 1 THEN 'stream' ELSE 'step' END AS per,
           iteration, count(gap_ns) AS gaps, coalesce(sum(gap_ns), 0) AS idle_ns,
           coalesce(sum(gap_ns) FILTER (WHERE category = 'host_wait'), 0) AS host_wait_ns,
           coalesce(sum(gap_ns) FILTER (WHERE category = 'kernel_wait'), 0) AS kernel_wait_ns,
           coalesce(sum(gap_ns) FILTER (WHERE category = 'other'), 0) AS other_ns
    FROM classed
    GROUP BY GROUPING SETS ((run_id, device_id, stream_id, iteration), (run_id, device_id, stream_id))
)
SELECT
    -- Run (one rank of a distributed job).
    run_id,
    -- GPU (CUDA device ordinal).
    device_id,
    -- Stream of that GPU.
    stream_id,
    -- 'stream': every gap of the stream (HTA's figure); 'step': the gaps ended by work of one step.
    per,
    -- The step (ProfilerStep#N) of the work that ended the gaps; NULL on a 'step' row: work
    -- launched outside every step (or with no launching call in the trace); NULL on a 'stream' row.
    iteration,
    -- Number of gaps (operations after the stream's first).
    gaps,
    -- Idle time: the gaps summed, ns (host_wait_ns + kernel_wait_ns + other_ns).
    idle_ns,
    -- Gaps whose operation was launched after the previous one ended, ns.
    host_wait_ns,
    -- Other gaps shorter than xsp_kernel_wait_ns, ns.
    kernel_wait_ns,
    -- The rest: queued work that waited on something else, ns.
    other_ns,
    -- host_wait_ns as a share of idle_ns, percent (HTA's idle_time_ratio x 100).
    round(100.0 * host_wait_ns / nullif(idle_ns, 0), 2) AS host_wait_pct,
    -- kernel_wait_ns as a share of idle_ns, percent.
    round(100.0 * kernel_wait_ns / nullif(idle_ns, 0), 2) AS kernel_wait_pct,
    -- other_ns as a share of idle_ns, percent.
    round(100.0 * other_ns / nullif(idle_ns, 0), 2) AS other_pct
FROM totals
WHERE per = 'stream' OR run_id IN (SELECT run_id FROM steps)  -- no per-step rows in a run without steps
ORDER BY run_id, device_id, stream_id, per DESC, iteration NULLS FIRST;
