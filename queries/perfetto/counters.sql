-- perfetto/counters: the selected counter samples, one series after the other.
--
-- From: perfetto_counters (queries/perfetto/select.sql).
SELECT
    -- Run of the sample.
    run_id,
    -- Counter name.
    name,
    -- Process the counter belongs to, or NULL.
    pid,
    -- Device the counter belongs to, or NULL.
    device_id,
    -- Sample time in the trace: the sample time less the run's shift.
    ts_ns - shift_ns AS ts,
    -- Sample value.
    value
FROM perfetto_counters
WHERE value IS NOT NULL
ORDER BY run_id, name, pid, device_id, ts_ns;
