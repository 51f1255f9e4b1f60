-- analyses/thread_scheduling: how much each thread ran and how much it was switched out, and how
-- much of it was switched out while no GPU of the run was busy -- a launch thread descheduled in
-- a GPU idle stretch is one whose GPU waited on the OS (a sleep, a blocking read, a lock, a
-- preemption), not on work it was doing.
--
-- From: thread_states (nsys SCHED_EVENTS: running / descheduled from each switch to the thread's
-- next), threads (names), xsp_thread_launches (lib/busy: the GPU work each thread launched), and
-- xsp_gpu_idle_windows (lib/busy: no GPU of the run busy between its first and last work,
-- stretches shorter than the variable xsp_min_gap_ns, default 1000 ns, left out).
--
-- title: Thread scheduling: running, switched out, switched out while the GPU idled
-- group: summary
-- include: lib/busy
-- columns: run_id INTEGER, pid BIGINT, tid BIGINT, thread VARCHAR, launches BIGINT, switches BIGINT,
--     running_ms DOUBLE, descheduled_ms DOUBLE, descheduled_in_gpu_idle_ms DOUBLE
WITH per_thread AS (
    SELECT run_id, pid, tid,
           count(*) AS switches,
           sum(end_ns - start_ns) FILTER (WHERE state = 'running') AS running_ns,
           sum(end_ns - start_ns) FILTER (WHERE state = 'descheduled') AS descheduled_ns
    FROM thread_states
    GROUP BY ALL
), out_in_gaps AS (
    -- Gaps do not overlap each other, nor do one thread's states: each overlap is counted once.
    SELECT t.run_id, t.pid, t.tid, sum(least(t.end_ns, g.gap_end_ns) - greatest(t.start_ns, g.gap_start_ns)) AS descheduled_in_gpu_idle_ns
    FROM thread_states AS t
    JOIN xsp_gpu_idle_windows AS g ON g.run_id = t.run_id AND t.start_ns < g.gap_end_ns AND t.end_ns > g.gap_start_ns
    WHERE t.state = 'descheduled'
    GROUP BY ALL
)
SELECT
    -- Run of the thread.
    p.run_id,
    -- Process id.
    p.pid,
    -- Thread id.
    p.tid,
    -- Thread name, where recorded.
    th.name AS thread,
    -- GPU operations the thread launched (0: not a launch thread).
    coalesce(la.launches, 0) AS launches,
    -- Scheduling events of the thread (switches in and out).
    p.switches,
    -- Time it was running (switched in), ms.
    round(coalesce(p.running_ns, 0) / 1e6, 3) AS running_ms,
    -- Time it was switched out (waiting, blocked or preempted), ms.
    round(coalesce(p.descheduled_ns, 0) / 1e6, 3) AS descheduled_ms,
    -- Of that, while no GPU of the run was busy, ms.
    round(coalesce(o.descheduled_in_gpu_idle_ns, 0) / 1e6, 3) AS descheduled_in_gpu_idle_ms
FROM per_thread AS p
LEFT JOIN out_in_gaps AS o USING (run_id, pid, tid)
LEFT JOIN xsp_thread_launches AS la USING (run_id, pid, tid)
LEFT JOIN threads AS th USING (run_id, pid, tid)
ORDER BY p.run_id, launches DESC, descheduled_in_gpu_idle_ms DESC, p.pid, p.tid;
