-- perfetto/slice_part_args: the source details (span_args) of one part of the slices, one row per
-- arg, unsorted -- xsp_trace/perfetto/slice_order.py places each beside its span's row (after the
-- part is sorted) and orders a span's args by key. Flat rows, not a list per span: gathering lists
-- in the part's query cost more than the rest of it on Kineto traces (a few args per op).
--
-- From: perfetto_span_args (queries/perfetto/slice_args.sql); the part as in perfetto/slices.sql:
-- run getvariable('xsp_perfetto_part_run'), span start in [xsp_perfetto_part_first, xsp_perfetto_part_last].
SELECT
    -- The span (perfetto/slices.span_id of the same part).
    span_id,
    -- Arg name.
    key,
    -- Arg value as text (NULL ones are left out of the trace).
    value
FROM perfetto_span_args
WHERE run_id = getvariable('xsp_perfetto_part_run')
  AND start_ns BETWEEN getvariable('xsp_perfetto_part_first') AND getvariable('xsp_perfetto_part_last');
