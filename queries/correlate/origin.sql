-- correlate/origin: the time zero of one run, runs.origin_ns -- the earliest time of any of its
-- events: the start of its first span, its first mark or its first counter sample.
--
-- From: `spans`, `marks` and `counters` of run getvariable('xsp_run_id').
-- Computes: runs.origin_ns of that run (NULL when it has no event at all). Every time that
-- analyze, diff, findings, the report and the Perfetto export show is relative to it.
UPDATE runs SET origin_ns = (
    SELECT min(t)
    FROM (
        SELECT min(start_ns) AS t FROM spans WHERE run_id = getvariable('xsp_run_id')
        UNION ALL SELECT min(ts_ns) FROM marks WHERE run_id = getvariable('xsp_run_id')
        UNION ALL SELECT min(ts_ns) FROM counters WHERE run_id = getvariable('xsp_run_id')
    )
)
WHERE run_id = getvariable('xsp_run_id');
