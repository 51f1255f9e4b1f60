-- analyses/kernel_sequences: the most frequent sequences of GPU work launched by one op -- fusion
-- candidates -- as Holistic Trace Analysis 0.5 finds its frequent CUDA kernel patterns
-- (CudaKernelAnalysis.get_frequent_cuda_kernel_sequences): a pattern is an op's name followed by the
-- names of the GPU operations launched under it (kernels, copies, sets, and the stream waits and
-- syncs Kineto records on the GPU, as HTA counts them), in start order, on any stream; equal
-- patterns are counted and their GPU and CPU time summed.
--
-- From: spans (CPU spans as the ops, GPU spans of kind kernel, memcpy, memset, sync), span_ancestors
-- (which op a GPU span was launched under). `--set sequence_op=TEXT` takes HTA's operator_name: the
-- ops are the CPU spans whose name contains TEXT (case-sensitive) at the smallest depth any of them
-- has in the run, as HTA roots its search at the shallowest ones. Without it the ops are each run's
-- outermost ops (kind op, no op above them on their thread) -- a default HTA does not have.
-- `--set sequence_min=N` (HTA's min_pattern_len, 3) drops ops that launched fewer than N operations.
-- Depth is HTA's: on each thread, except that when a run has one thread with a ProfilerStep# range
-- (main) and one other with an autograd:: span (backward), the backward thread's top-level spans
-- inside a main-thread "## backward ##" range (else a ProfilerStep# range) hang under it, as HTA
-- links the two stacks (CallGraph._link_main_and_bwd_stacks). Differs from HTA: times are exact ns (HTA's are whole µs, its float start
-- rounded up and end down); GPU work on stream 0 counts (HTA links work to its launch only on a
-- stream above 0, so on ROCm traces, stream 0, it finds no pattern). Every pattern is listed (HTA's
-- top_k limits its plot only).
--
-- title: Frequent kernel sequences launched by one op: fusion candidates (HTA)
-- group: kernel
-- include:
-- columns: run_id INTEGER, operator VARCHAR, operations BIGINT, count BIGINT, gpu_ns HUGEINT, gpu_pct
--     DOUBLE, op_ns HUGEINT, pattern VARCHAR
WITH labelled AS (  -- HTA's thread labels: main holds a ProfilerStep#, bwd an autograd:: span
    SELECT run_id, pid, tid,
           CASE WHEN bool_or(starts_with(name, 'ProfilerStep#')) THEN 'main'
                WHEN bool_or(contains(name, 'autograd::')) THEN 'bwd' END AS label
    FROM spans WHERE device_id IS NULL AND tid IS NOT NULL GROUP BY ALL
), linked AS (  -- HTA links the two threads only when a run has exactly one of each
    SELECT run_id, any_value(pid) FILTER (WHERE label = 'main') AS main_pid, any_value(tid) FILTER (WHERE label = 'main') AS main_tid,
           any_value(pid) FILTER (WHERE label = 'bwd') AS bwd_pid, any_value(tid) FILTER (WHERE label = 'bwd') AS bwd_tid
    FROM labelled WHERE label IS NOT NULL GROUP BY run_id
    HAVING count(*) = 2 AND count(*) FILTER (WHERE label = 'main') = 1
), hosts AS (  -- the main thread's "## backward ##" ranges, else its ProfilerStep# ranges
    SELECT s.run_id, s.start_ns, s.end_ns, s.depth
    FROM spans AS s JOIN linked AS l ON l.run_id = s.run_id AND l.main_pid = s.pid AND l.main_tid = s.tid
    WHERE starts_with(s.name, '## backward ##') OR starts_with(s.name, 'ProfilerStep#')
    QUALIFY starts_with(s.name, '## backward ##') = max(starts_with(s.name, '## backward ##')) OVER (PARTITION BY s.run_id)
), lifted AS (  -- a top-level span of the autograd thread inside a host hangs under it in HTA's graph
    SELECT b.run_id, b.span_id, any_value(h.depth) + 1 AS shift
    FROM spans AS b
    JOIN linked AS l ON l.run_id = b.run_id AND l.bwd_pid = b.pid AND l.bwd_tid = b.tid
    JOIN hosts AS h ON h.run_id = b.run_id AND b.start_ns >= h.start_ns AND b.end_ns <= h.end_ns
    WHERE b.depth = 0
    GROUP BY b.run_id, b.span_id
), shifted AS (  -- the lifted spans and everything below them on their thread
    SELECT run_id, span_id, shift FROM lifted
    UNION ALL
    SELECT a.run_id, a.span_id, t.shift FROM span_ancestors AS a JOIN lifted AS t ON t.run_id = a.run_id AND t.span_id = a.ancestor_id
), ops AS (
    SELECT o.run_id, o.span_id, o.name, o.end_ns - o.start_ns AS duration_ns, o.depth + coalesce(sh.shift, 0) AS depth
    FROM spans AS o LEFT JOIN shifted AS sh ON sh.run_id = o.run_id AND sh.span_id = o.span_id
    WHERE o.device_id IS NULL
      AND CASE WHEN getvariable('xsp_sequence_op') IS NULL
               THEN o.kind = 'op' AND NOT EXISTS (
                   SELECT 1 FROM span_ancestors AS a JOIN spans AS up ON up.run_id = a.run_id AND up.span_id = a.ancestor_id
                   WHERE a.run_id = o.run_id AND a.span_id = o.span_id AND up.kind = 'op')
               ELSE contains(o.name, getvariable('xsp_sequence_op')) END
), shallowest AS (
    SELECT * FROM ops QUALIFY depth = min(depth) OVER (PARTITION BY run_id)
        OR getvariable('xsp_sequence_op') IS NULL
), launched AS (
    SELECT o.run_id, o.span_id, o.name AS op_name, o.duration_ns AS op_ns,
           count(*) AS operations,
           sum(g.end_ns - g.start_ns) AS gpu_ns,
           string_agg(g.name, '|' ORDER BY g.start_ns, g.span_id) AS gpu_names
    FROM shallowest AS o
    JOIN span_ancestors AS a ON a.run_id = o.run_id AND a.ancestor_id = o.span_id
    JOIN spans AS g ON g.run_id = a.run_id AND g.span_id = a.span_id
    WHERE g.kind IN ('kernel', 'memcpy', 'memset', 'sync')
    GROUP BY ALL
    HAVING count(*) >= coalesce(getvariable('xsp_sequence_min'), 3)
), run_gpu AS (
    SELECT run_id, sum(end_ns - start_ns) AS gpu_ns FROM spans WHERE kind IN ('kernel', 'memcpy', 'memset', 'sync') GROUP BY run_id
)
SELECT
    -- Run.
    l.run_id,
    -- The op that launched the sequence (the pattern's first name).
    l.op_name AS operator,
    -- Number of GPU operations in the sequence (kernels, copies, sets, GPU-side waits).
    l.operations AS operations,
    -- Number of times the op launched exactly this sequence.
    count(*) AS count,
    -- GPU time of all its occurrences: the summed durations of their GPU operations, ns.
    sum(l.gpu_ns) AS gpu_ns,
    -- Share of the run's summed GPU operation time (the same kinds), percent: what fusing could act on.
    round(100.0 * sum(l.gpu_ns) / nullif(any_value(r.gpu_ns), 0), 2) AS gpu_pct,
    -- CPU time of the launching op over all occurrences, ns.
    sum(l.op_ns) AS op_ns,
    -- HTA's pattern text: the op's name, then each GPU operation's name in start order, joined by "|".
    l.op_name || '|' || l.gpu_names AS pattern
FROM launched AS l JOIN run_gpu AS r USING (run_id)
GROUP BY l.run_id, l.op_name, l.operations, l.gpu_names
ORDER BY l.run_id, count DESC, pattern;
