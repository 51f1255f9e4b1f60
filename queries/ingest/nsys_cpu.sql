-- ingest/nsys_cpu: the CPU samples and thread scheduling of one Nsight Systems export.
--
-- From: the staging tables `_nsys_samples` (COMPOSITE_EVENTS), `_nsys_sample_frames`
-- (SAMPLING_CALLCHAINS), `_nsys_sched` (SCHED_EVENTS), `_nsys_strings` and `_nsys_enums`
-- (thread state labels), pid/tid decoded by xsp_trace.convert.nsys; run after ingest/nsys.
-- Computes: cpu_samples (one row per export sample, its innermost frame named), cpu_sample_frames
-- (one row per call-chain frame), thread_states (one row per scheduling event: the state until the
-- thread's next event), and the processes and threads that own only samples or switches.

INSERT INTO cpu_samples (run_id, sample_id, ts_ns, pid, tid, cpu, thread_state, function, module)
SELECT getvariable('xsp_run_id'), s.sample_id, s.ts_ns, s.pid, s.tid, s.cpu, e.label, fn.value, m.value
FROM _nsys_samples AS s
LEFT JOIN _nsys_sample_frames AS f ON f.sample_id = s.sample_id AND f.depth = 0
LEFT JOIN _nsys_strings AS fn ON fn.id = f.function_id
LEFT JOIN _nsys_strings AS m ON m.id = f.module_id
LEFT JOIN _nsys_enums AS e ON e.enum = 'thread_state' AND e.code = s.thread_state
ORDER BY s.ts_ns, s.sample_id;

INSERT INTO cpu_sample_frames (run_id, sample_id, depth, function, module)
SELECT getvariable('xsp_run_id'), f.sample_id, f.depth, fn.value, m.value
FROM _nsys_sample_frames AS f
LEFT JOIN _nsys_strings AS fn ON fn.id = f.function_id
LEFT JOIN _nsys_strings AS m ON m.id = f.module_id
ORDER BY f.sample_id, f.depth;

-- Each switch opens the thread's state until its next switch; the last one of a thread ends at
-- the run's last switch (nsys records no end of the session per thread).
INSERT INTO thread_states (run_id, pid, tid, cpu, state, start_ns, end_ns)
SELECT getvariable('xsp_run_id'), pid, tid, cpu,
       CASE WHEN sched_in <> 0 THEN getvariable('nsys_sched_in_state') ELSE getvariable('nsys_sched_out_state') END,
       ts_ns,
       coalesce(lead(ts_ns) OVER (PARTITION BY pid, tid ORDER BY ts_ns, sched_in), max(ts_ns) OVER ())
FROM _nsys_sched
ORDER BY pid, tid, ts_ns;

INSERT INTO processes (run_id, pid)
SELECT DISTINCT getvariable('xsp_run_id'), pid
FROM (SELECT pid FROM _nsys_samples UNION ALL SELECT pid FROM _nsys_sched)
WHERE pid IS NOT NULL
  AND pid NOT IN (SELECT pid FROM processes WHERE run_id = getvariable('xsp_run_id'));

INSERT INTO threads (run_id, pid, tid, name)
SELECT getvariable('xsp_run_id'), owners.pid, owners.tid,
       (SELECT any_value(s.value) FROM _nsys_threads AS t JOIN _nsys_strings AS s ON s.id = t.name_id
        WHERE t.pid = owners.pid AND t.tid = owners.tid)
FROM (
    SELECT DISTINCT pid, tid FROM (SELECT pid, tid FROM _nsys_samples UNION ALL SELECT pid, tid FROM _nsys_sched)
    WHERE pid IS NOT NULL AND tid IS NOT NULL
) AS owners
WHERE (owners.pid, owners.tid) NOT IN (SELECT (pid, tid) FROM threads WHERE run_id = getvariable('xsp_run_id'));
