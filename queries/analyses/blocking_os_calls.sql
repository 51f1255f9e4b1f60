-- analyses/blocking_os_calls: the OS runtime calls that block their thread (locks, condition
-- waits, I/O, sleeps), per thread and function: how long they held the thread, and how much of
-- that fell while no GPU of the run was busy -- a launch thread blocked in a GPU idle stretch is
-- why the GPU had nothing to run.
--
-- From: spans of kind 'other' in the OS runtime category (nsys --trace=osrt; the category and the
-- blocking function names are variables set from xsp_trace/formats/nsys_export.py), threads
-- (names), xsp_thread_launches (lib/busy: the GPU work each thread launched), xsp_gpu_idle_windows
-- (lib/busy: no GPU of the run busy between its first and last work, stretches shorter than
-- the variable xsp_min_gap_ns, default 1000 ns, left out).
-- A call nested in another blocking call of its thread (fread calling read) is counted with it
-- only: overlapping calls of a thread are merged first, so no time is counted twice.
--
-- title: Blocking OS runtime calls (locks, waits, I/O, sleeps), and those in GPU idle time
-- group: summary
-- include: lib/busy
-- columns: run_id INTEGER, pid BIGINT, tid BIGINT, thread VARCHAR, launches BIGINT, function VARCHAR, calls
--     BIGINT, total_ms DOUBLE, longest_ms DOUBLE, in_gpu_idle_ms DOUBLE
WITH calls AS (
    SELECT run_id, pid, tid, name, start_ns, end_ns
    FROM spans
    WHERE kind = 'other' AND category = getvariable('xsp_osrt_category')
      AND list_contains(getvariable('xsp_osrt_blocking_calls'), name)
), outermost AS (
    SELECT c.*
    FROM calls AS c
    WHERE NOT EXISTS (
        SELECT 1 FROM calls AS o
        WHERE o.run_id = c.run_id AND o.pid = c.pid AND o.tid = c.tid
          AND o.start_ns <= c.start_ns AND o.end_ns >= c.end_ns
          AND (o.start_ns, -o.end_ns, o.name) < (c.start_ns, -c.end_ns, c.name)
    )
), in_gaps AS (
    SELECT c.run_id, c.pid, c.tid, c.name, c.start_ns, c.end_ns,
           sum(least(c.end_ns, g.gap_end_ns) - greatest(c.start_ns, g.gap_start_ns)) AS idle_ns
    FROM outermost AS c
    JOIN xsp_gpu_idle_windows AS g ON g.run_id = c.run_id AND c.start_ns < g.gap_end_ns AND c.end_ns > g.gap_start_ns
    GROUP BY ALL
), per_function AS (
    SELECT c.run_id, c.pid, c.tid, c.name,
           count(*) AS calls,
           sum(c.end_ns - c.start_ns) AS total_ns,
           max(c.end_ns - c.start_ns) AS longest_ns,
           coalesce(sum(i.idle_ns), 0) AS in_gpu_idle_ns
    FROM outermost AS c
    LEFT JOIN in_gaps AS i USING (run_id, pid, tid, name, start_ns, end_ns)
    GROUP BY ALL
)
SELECT
    -- Run of the calls.
    f.run_id,
    -- Process id.
    f.pid,
    -- Thread id.
    f.tid,
    -- Thread name, where recorded.
    th.name AS thread,
    -- GPU operations the thread launched (0: not a launch thread).
    coalesce(la.launches, 0) AS launches,
    -- The blocking function (libc entry point).
    f.name AS function,
    -- Calls of it on the thread (not counting those inside another blocking call).
    f.calls,
    -- Time the calls held the thread, ms.
    round(f.total_ns / 1e6, 3) AS total_ms,
    -- Longest call, ms.
    round(f.longest_ns / 1e6, 3) AS longest_ms,
    -- Of the total, while no GPU of the run was busy, ms (0 in a run without GPU work).
    round(f.in_gpu_idle_ns / 1e6, 3) AS in_gpu_idle_ms
FROM per_function AS f
LEFT JOIN xsp_thread_launches AS la USING (run_id, pid, tid)
LEFT JOIN threads AS th USING (run_id, pid, tid)
ORDER BY f.run_id, in_gpu_idle_ms DESC, total_ms DESC, f.pid, f.tid, function;
