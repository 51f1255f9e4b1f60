-- analyses/gpu_idle_gaps: every stretch of time a GPU sat idle between two pieces of work, longest
-- first, with what the CPU was doing meanwhile -- on the thread that launched the work that ended
-- the gap: the innermost CPU span (op, API call, range) running at the middle of the gap, whether a
-- synchronising call was running then, and the thread's class in the CPU-time taxonomy (launch,
-- sync, host, idle: xsp_trace/formats/cuda_api.py). Where that thread had no span then (or no
-- launch is recorded), the other threads of the process say what the CPU was doing: the thread
-- whose innermost span at mid-gap ranks first by class (sync, then launch, then host) and depth.
--
-- From: runs (origin_ns: the times shown are relative to it), xsp_gpu_busy_intervals (prelude: union of kernels, copies and sets per GPU), launches and
-- spans (the call that launched the first GPU operation after the gap, its thread's spans),
-- xsp_cpu_calls (prelude: the class of each API call, and why a sync call waits), cpu_samples (nsys
-- --sample=cpu: the function sampled most in the gap, also where no span covers it). Gaps shorter
-- than the variable xsp_min_gap_ns (default 1000 ns) are left out.
-- Counts: every kernel, copy and set the session holds -- under `analyze --scope all` (the
-- default) all of the trace's, also work launched before the trace started (no launching call in
-- it) or after its last step; under --scope profiled only work launched in the profiled steps, as
-- Holistic Trace Analysis 0.5 counts with include_last_profiler_step=True (its default also drops
-- the work launched in the last step; lib/scope.sql says which work is left out).
-- host-side launch late: the launching call started after the GPU went idle (the CPU was not
-- feeding the GPU: host-bound; HTA's "host wait"); otherwise the work was already queued and the
-- GPU waited on something else (a dependency, an event).
--
-- title: GPU idle gaps and what the CPU was doing meanwhile
-- group: gpu
-- include: lib/busy, lib/sync
-- columns: run_id INTEGER, device_id INTEGER, gap_start_ns BIGINT, gap_end_ns BIGINT, gap_ns BIGINT,
--     next_gpu_name VARCHAR, launch_call VARCHAR, launch_tid BIGINT, launch_late BOOLEAN, cpu_span VARCHAR,
--     cpu_kind VARCHAR, sync_call VARCHAR, sync_kind VARCHAR, cpu_class VARCHAR, other_tid BIGINT,
--     other_cpu_span VARCHAR, other_cpu_class VARCHAR, sampled_function VARCHAR, sampled_pct DOUBLE
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
           api.pid, api.tid, coalesce(api.pid, w.pid) AS process_pid, (n.gap_start_ns + n.gap_end_ns) // 2 AS mid_ns
    FROM next_op AS n
    JOIN spans AS w ON w.run_id = n.run_id AND w.span_id = n.gpu_span_id
    LEFT JOIN launches AS l ON l.run_id = n.run_id AND l.gpu_span_id = n.gpu_span_id
    LEFT JOIN spans AS api ON api.run_id = l.run_id AND api.span_id = l.api_span_id
), at_mid AS (
    -- Every CPU span of the process running at mid-gap, with its class.
    SELECT la.run_id, la.device_id, la.gap_start_ns, c.tid, c.name, c.kind, c.depth,
           la.tid IS NOT DISTINCT FROM c.tid AS on_launch_thread,
           k.wait_kind AS sync_kind,
           CASE WHEN c.kind = 'api' THEN k.cpu_class ELSE 'host' END AS cpu_class
    FROM launched AS la
    JOIN spans AS c ON c.run_id = la.run_id AND c.pid = la.process_pid AND c.tid IS NOT NULL
                   AND c.kind IN ('model', 'layer', 'op', 'annotation', 'api', 'other')
                   AND c.start_ns <= la.mid_ns AND c.end_ns > la.mid_ns
    LEFT JOIN xsp_cpu_calls AS k ON k.run_id = c.run_id AND k.span_id = c.span_id
), cpu_at_mid AS (
    SELECT run_id, device_id, gap_start_ns,
           arg_max(name, depth) AS cpu_span,
           arg_max(kind, depth) AS cpu_kind,
           arg_max(cpu_class, depth) AS cpu_class,
           max(sync_kind) AS sync_kind,
           arg_max(name, sync_kind IS NOT NULL) AS sync_call
    FROM at_mid
    WHERE on_launch_thread
    GROUP BY ALL
), innermost_per_thread AS (
    SELECT run_id, device_id, gap_start_ns, tid, arg_max(name, depth) AS name, arg_max(cpu_class, depth) AS cpu_class, max(depth) AS depth
    FROM at_mid
    WHERE NOT on_launch_thread
    GROUP BY ALL
), other_thread AS (
    SELECT run_id, device_id, gap_start_ns,
           arg_max(tid, (CASE cpu_class WHEN 'sync' THEN 3 WHEN 'launch' THEN 2 ELSE 1 END, depth, -tid)) AS other_tid,
           arg_max(name, (CASE cpu_class WHEN 'sync' THEN 3 WHEN 'launch' THEN 2 ELSE 1 END, depth, -tid)) AS other_cpu_span,
           arg_max(cpu_class, (CASE cpu_class WHEN 'sync' THEN 3 WHEN 'launch' THEN 2 ELSE 1 END, depth, -tid)) AS other_cpu_class
    FROM innermost_per_thread
    GROUP BY ALL
), sampled_counts AS (
    SELECT la.run_id, la.device_id, la.gap_start_ns, coalesce(s.function, '(no call chain)') AS function, count(*) AS samples
    FROM launched AS la
    JOIN cpu_samples AS s ON s.run_id = la.run_id AND s.pid = la.process_pid AND (la.tid IS NULL OR s.tid = la.tid)
                         AND s.ts_ns >= la.gap_start_ns AND s.ts_ns < la.gap_end_ns
    GROUP BY ALL
), sampled AS (
    SELECT run_id, device_id, gap_start_ns,
           arg_min(function, (-samples, function)) AS sampled_function,
           round(100.0 * max(samples) / sum(samples), 1) AS sampled_pct
    FROM sampled_counts
    GROUP BY ALL
)
SELECT
    -- Run.
    la.run_id,
    -- The idle GPU.
    la.device_id,
    -- Start of the idle stretch (end of the GPU's last busy interval), ns after the run's origin
    -- (runs.origin_ns): the time ui.perfetto.dev shows for it in `xsp-trace perfetto`'s export.
    la.gap_start_ns - r.origin_ns AS gap_start_ns,
    -- End of the idle stretch (start of the next GPU operation), ns after the run's origin.
    la.gap_end_ns - r.origin_ns AS gap_end_ns,
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
    -- Why that call waits: explicit, implicit, pageable copy (xsp_cpu_calls.wait_kind; NULL: none).
    m.sync_kind,
    -- The launching thread's class at mid-gap: launch, sync, host or idle (NULL: no launch recorded).
    CASE WHEN la.api_span_id IS NULL THEN NULL ELSE coalesce(m.cpu_class, 'idle') END AS cpu_class,
    -- Where the launching thread had no span at mid-gap, or no launch is recorded: another thread of
    -- the process, the one whose innermost span then ranks first (sync, launch, host; then depth).
    CASE WHEN m.cpu_span IS NULL THEN o.other_tid END AS other_tid,
    -- Its innermost span at mid-gap (NULL: no other thread had one, or the launching thread had one).
    CASE WHEN m.cpu_span IS NULL THEN o.other_cpu_span END AS other_cpu_span,
    -- Its class: launch, sync or host.
    CASE WHEN m.cpu_span IS NULL THEN o.other_cpu_class END AS other_cpu_class,
    -- The function the CPU sampler caught most often during the gap on the launching thread (on the
    -- process where no launch is recorded); NULL: no CPU samples (recorded by nsys --sample=cpu only).
    sa.sampled_function,
    -- Its share of that thread's samples in the gap, percent.
    sa.sampled_pct
FROM launched AS la
JOIN runs AS r ON r.run_id = la.run_id
LEFT JOIN cpu_at_mid AS m ON m.run_id = la.run_id AND m.device_id = la.device_id AND m.gap_start_ns = la.gap_start_ns
LEFT JOIN other_thread AS o ON o.run_id = la.run_id AND o.device_id = la.device_id AND o.gap_start_ns = la.gap_start_ns
LEFT JOIN sampled AS sa ON sa.run_id = la.run_id AND sa.device_id = la.device_id AND sa.gap_start_ns = la.gap_start_ns
ORDER BY la.run_id, gap_ns DESC, la.device_id, la.gap_start_ns;
