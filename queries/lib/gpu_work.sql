-- lib/gpu_work: GPU work classes -- communication, computation, memory -- of every kernel, copy and
-- set, and each GPU's timeline cut into stretches by the set of classes running.
-- include:
--
-- From: spans (kernels, copies, sets); the kernel-name patterns are variables set from
-- xsp_trace/formats/collectives.py. The split, overlap and collective analyses read these.

-- Class of a GPU span: communication (NCCL/RCCL kernels), memory (memcpy/memset), computation
-- (other kernels), other (kernels HTA leaves out: names with Memcpy or Sync; sync spans).
CREATE OR REPLACE TEMP MACRO xsp_gpu_work_class(kind, name) AS
    CASE
        WHEN kind IN ('memcpy', 'memset') THEN 'memory'
        WHEN kind <> 'kernel' THEN 'other'
        WHEN regexp_matches(name, getvariable('xsp_comm_kernel_pattern')) THEN 'communication'
        WHEN regexp_matches(name, getvariable('xsp_not_compute_kernel_pattern')) THEN 'other'
        ELSE 'computation'
    END;

-- Every GPU kernel / copy / set with its class.
CREATE OR REPLACE TEMP VIEW xsp_gpu_work AS
SELECT
    -- Run and span (spans.span_id).
    run_id,
    -- The GPU span.
    span_id,
    -- GPU.
    device_id,
    -- Stream.
    stream_id,
    -- kernel, memcpy or memset.
    kind,
    -- Kernel or operation name.
    name,
    -- Start, ns on the run clock.
    start_ns,
    -- End, ns.
    end_ns,
    -- computation, communication, memory or other (xsp_gpu_work_class).
    xsp_gpu_work_class(kind, name) AS work_class
FROM spans
WHERE kind IN ('kernel', 'memcpy', 'memset');

-- The union of each class's intervals per GPU: maximal busy stretches (touching ones merged).
CREATE OR REPLACE TEMP VIEW _xsp_gpu_class_intervals AS
WITH ordered AS (
    SELECT run_id, device_id, work_class, start_ns, end_ns,
           max(end_ns) OVER (PARTITION BY run_id, device_id, work_class ORDER BY start_ns, end_ns
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered_until
    FROM xsp_gpu_work WHERE work_class <> 'other'
), islands AS (
    SELECT *, sum(CASE WHEN covered_until IS NULL OR start_ns > covered_until THEN 1 ELSE 0 END)
                  OVER (PARTITION BY run_id, device_id, work_class ORDER BY start_ns, end_ns ROWS UNBOUNDED PRECEDING) AS island
    FROM ordered
)
SELECT run_id, device_id, work_class, min(start_ns) AS start_ns, max(end_ns) AS end_ns
FROM islands GROUP BY run_id, device_id, work_class, island;

-- Bit of each class in a state mask (computation 1, communication 2, memory 4; HTA's order).
CREATE OR REPLACE TEMP VIEW _xsp_gpu_class_bits AS
SELECT * FROM (VALUES ('computation', 1), ('communication', 2), ('memory', 4)) AS t(work_class, bit);

-- The GPU timeline of each device cut where any class starts or stops: every stretch with the
-- set of classes running in it (state: bit mask; 0 never appears -- idle stretches are left out).
CREATE OR REPLACE TEMP VIEW xsp_gpu_class_segments AS
WITH edges AS (
    SELECT i.run_id, i.device_id, i.start_ns AS t, b.bit AS delta
    FROM _xsp_gpu_class_intervals AS i JOIN _xsp_gpu_class_bits AS b USING (work_class)
    UNION ALL
    SELECT i.run_id, i.device_id, i.end_ns, -b.bit
    FROM _xsp_gpu_class_intervals AS i JOIN _xsp_gpu_class_bits AS b USING (work_class)
), running AS (
    SELECT run_id, device_id, t,
           sum(delta) OVER w AS state,
           lead(t) OVER w AS next_t
    FROM edges
    WINDOW w AS (PARTITION BY run_id, device_id ORDER BY t, delta ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
)
SELECT
    -- Run.
    run_id,
    -- GPU.
    device_id,
    -- Start of the stretch, ns on the run clock.
    t AS start_ns,
    -- Its end, ns.
    next_t AS end_ns,
    -- The classes running, as a bit mask (computation 1, communication 2, memory 4).
    CAST(state AS INTEGER) AS state,
       -- The same as names, e.g. 'computation', 'computation+communication' (HTA: COMPUTATION overlapping COMMUNICATION).
       array_to_string(list_filter(['computation', 'communication', 'memory'],
                                   lambda c, i: (CAST(state AS INTEGER) >> (i - 1)) & 1 = 1), '+') AS classes
FROM running
WHERE state > 0 AND next_t > t;
