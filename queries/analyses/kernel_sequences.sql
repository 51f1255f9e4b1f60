-- analyses/kernel_sequences: the most frequent sequences of GPU work launched by one op -- fusion
-- candidates -- as Holistic Trace Analysis 0.5 finds its frequent CUDA kernel patterns
-- (CudaKernelAnalysis.get_frequent_cuda_kernel_sequences): a pattern is an op's name followed by the
-- names of the kernels, copies and sets launched under it (on any stream of its process), in start
-- order; equal patterns are counted and their GPU and CPU time summed.
--
-- From: spans (CPU spans as the ops, GPU spans of kind kernel, memcpy and memset), span_ancestors
-- (which op a GPU span was launched under). `--set sequence_op=TEXT` takes HTA's operator_name: the
-- ops are the CPU spans whose name contains TEXT (case-sensitive) at the smallest depth any of them
-- has in the run, as HTA roots its search at the shallowest ones. Without it the ops are each run's
-- outermost ops (kind op, no op above them on their thread) -- a default HTA does not have.
-- `--set sequence_min=N` (HTA's min_pattern_len, 3) drops ops that launched fewer than N operations.
-- Differs from HTA: depth is counted on each thread (HTA hangs the autograd thread under the main
-- thread's "## backward ##" range when there is one, so an operator TEXT that matches spans on both
-- threads can root at other depths there); times are exact ns (HTA's are whole µs, its float start
-- rounded up and end down). Every pattern is listed (HTA's top_k limits its plot only).
WITH ops AS (
    SELECT run_id, span_id, name, depth, end_ns - start_ns AS duration_ns
    FROM spans AS o
    WHERE device_id IS NULL
      AND CASE WHEN getvariable('xsp_sequence_op') IS NULL
               THEN kind = 'op' AND NOT EXISTS (
                   SELECT 1 FROM span_ancestors AS a JOIN spans AS up ON up.run_id = a.run_id AND up.span_id = a.ancestor_id
                   WHERE a.run_id = o.run_id AND a.span_id = o.span_id AND up.kind = 'op')
               ELSE contains(name, getvariable('xsp_sequence_op')) END
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
    WHERE g.kind IN ('kernel', 'memcpy', 'memset')
    GROUP BY ALL
    HAVING count(*) >= coalesce(getvariable('xsp_sequence_min'), 3)
), run_gpu AS (
    SELECT run_id, sum(end_ns - start_ns) AS gpu_ns FROM spans WHERE kind IN ('kernel', 'memcpy', 'memset') GROUP BY run_id
)
SELECT
    -- Run.
    l.run_id,
    -- The op that launched the sequence (the pattern's first name).
    l.op_name AS operator,
    -- Number of GPU operations in the sequence.
    l.operations AS operations,
    -- Number of times the op launched exactly this sequence.
    count(*) AS count,
    -- GPU time of all its occurrences: the summed durations of their kernels, copies and sets, ns.
    sum(l.gpu_ns) AS gpu_ns,
    -- Share of the run's summed GPU operation time, percent: what fusing the sequence could act on.
    round(100.0 * sum(l.gpu_ns) / nullif(any_value(r.gpu_ns), 0), 2) AS gpu_pct,
    -- CPU time of the launching op over all occurrences, ns.
    sum(l.op_ns) AS op_ns,
    -- HTA's pattern text: the op's name, then each GPU operation's name in start order, joined by "|".
    l.op_name || '|' || l.gpu_names AS pattern
FROM launched AS l JOIN run_gpu AS r USING (run_id)
GROUP BY l.run_id, l.op_name, l.operations, l.gpu_names
ORDER BY l.run_id, count DESC, pattern;
