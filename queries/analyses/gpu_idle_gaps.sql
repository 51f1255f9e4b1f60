-- analyses/gpu_idle_gaps: every stretch of time a GPU sat idle between two pieces of work, longest
-- first, with what the CPU was doing meanwhile -- on the thread that launched the work that ended
-- the gap: the innermost CPU span (op, API call, range) running at the middle of the gap, and
-- whether a synchronising call was running then.
--
-- From: xsp_gpu_busy_intervals (prelude: union of kernels, copies and sets per GPU), launches and
-- spans (the call that launched the first GPU operation after the gap, its thread's spans),
-- xsp_sync_call_kind (xsp_trace/formats/cuda_api.py). Gaps shorter than the variable
-- xsp_min_gap_ns (default 1000 ns) are left out.
-- Counts: every kernel, copy and set the session holds -- under `analyze --scope all` (the
-- default) all of the trace's, also work launched before the trace started (no launching call in
-- it) or after its last step; under --scope profiled only work launched in the profiled steps, as
-- Holistic Trace Analysis 0.5 counts (analyses/prelude_scope.sql says which work that leaves out).
-- host-side launch late: the launching call started after the GPU went idle (the CPU was not
-- feeding the GPU: host-bound); otherwise the work was already queued and the GPU waited on
-- something else (a dependency, an event).
WITH busy AS (
    SELECT *, lead(start_ns) OVER (PARTITION BY run_id, device_id ORDER BY start_ns) AS next_start_ns
    FROM xsp_gpu_busy_intervals
), gaps AS (
    SELECT run_id, device_id, end_ns AS gap_start_ns, next_start_ns AS gap_end_ns
    FROM busy
    WHERE next_start_ns - end_ns >= coalesce(getvariable('xsp_min_gap_ns'), 1000)
), next_op AS (
    SELECT g.run_id, g.device_id, g.gap_start_ns, g.gap_end_ns,
           arg_min(w.span_id, w.start_ns) AS gpu_span_id
    FROM gaps AS g
    JOIN xsp_gpu_work AS w ON w.run_id = g.run_id AND w.device_id = g.device_id AND w.start_ns = g.gap_end_ns
    GROUP BY ALL
), launched AS (
    SELECT n.*, w.name AS next_gpu_name, api.span_id AS api_span_id, api.name AS launch_call, api.start_ns AS launch_start_ns,
           api.pid, api.tid
    FROM next_op AS n
    JOIN xsp_gpu_work AS w ON w.run_id = n.run_id AND w.span_id = n.gpu_span_id
    LEFT JOIN launches AS l ON l.run_id = n.run_id AND l.gpu_span_id = n.gpu_span_id
    LEFT JOIN spans AS api ON api.run_id = l.run_id AND api.span_id = l.api_span_id
), cpu_at_mid AS (
    SELECT la.run_id, la.device_id, la.gap_start_ns,
           arg_max(c.name, c.depth) AS cpu_span,
           arg_max(c.kind, c.depth) AS cpu_kind,
           max(xsp_sync_call_kind(c.kind, c.name)) AS sync_kind,
           arg_max(c.name, xsp_sync_call_kind(c.kind, c.name) IS NOT NULL) AS sync_call
    FROM launched AS la
    JOIN spans AS c ON c.run_id = la.run_id AND c.pid = la.pid AND c.tid = la.tid
                   AND c.start_ns <= (la.gap_start_ns + la.gap_end_ns) // 2 AND c.end_ns > (la.gap_start_ns + la.gap_end_ns) // 2
    GROUP BY ALL
)
SELECT
    -- Run.
    la.run_id,
    -- The idle GPU.
    la.device_id,
    -- Start of the idle stretch (end of the GPU's last busy interval), ns on the run clock.
    la.gap_start_ns,
    -- End of the idle stretch (start of the next GPU operation), ns on the run clock.
    la.gap_end_ns,
    -- Length of the idle stretch, ns (no GPU work of the scope running).
    la.gap_end_ns - la.gap_start_ns AS gap_ns,
    -- Name of the GPU operation (kernel, copy, set) that ended the gap.
    la.next_gpu_name,
    -- The API call that launched it (NULL where the trace links no launch).
    la.launch_call,
    -- The thread that made that call.
    la.tid AS launch_tid,
    -- Launch started after the GPU went idle (the CPU was late: host-bound gap).
    la.launch_start_ns > la.gap_start_ns AS launch_late,
    -- Name of the innermost CPU span on that thread at the middle of the gap (NULL: none running).
    m.cpu_span,
    -- Its kind (op, api, annotation ...).
    m.cpu_kind,
    -- A synchronising call running then on that thread, by name (NULL: none).
    CASE WHEN m.sync_kind IS NOT NULL THEN m.sync_call END AS sync_call,
    -- Whether that call synchronises explicitly or implicitly (xsp_sync_call_kind; NULL: none).
    m.sync_kind
FROM launched AS la
LEFT JOIN cpu_at_mid AS m ON m.run_id = la.run_id AND m.device_id = la.device_id AND m.gap_start_ns = la.gap_start_ns
ORDER BY la.run_id, gap_ns DESC, la.device_id, la.gap_start_ns;
