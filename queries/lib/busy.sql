-- lib/busy: every GPU's busy stretches -- the union of its kernels, copies and sets over all
-- streams -- which the idle-gap, utilisation and step analyses read.
-- include: lib/gpu_work
--
-- From: the GPU work (lib/gpu_work).

-- Every GPU's busy stretches: the union of its kernels, copies and sets over all streams.
CREATE OR REPLACE TEMP VIEW xsp_gpu_busy_intervals AS
WITH ordered AS (
    SELECT run_id, device_id, start_ns, end_ns,
           max(end_ns) OVER (PARTITION BY run_id, device_id ORDER BY start_ns, end_ns
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered_until
    FROM xsp_gpu_work
), islands AS (
    SELECT *, sum(CASE WHEN covered_until IS NULL OR start_ns > covered_until THEN 1 ELSE 0 END)
                  OVER (PARTITION BY run_id, device_id ORDER BY start_ns, end_ns ROWS UNBOUNDED PRECEDING) AS island
    FROM ordered
)
SELECT
    -- Run.
    run_id,
    -- GPU.
    device_id,
    -- Start of the busy stretch, ns on the run clock.
    min(start_ns) AS start_ns,
    -- Its end, ns.
    max(end_ns) AS end_ns
FROM islands GROUP BY run_id, device_id, island;
