-- lib/op_roof: the roof of every modelled op on its device, for the shape-based roofline
-- (analyses/op_roofline).
-- include: lib/op_perf
--
-- From: xsp_op_perf (lib/op_perf), devices and xsp_matrix_peaks (the session's device peaks,
-- xsp_trace/analyze/facts.py).

-- The roof for an op on its device: the dense matrix peak of its precision for matrix ops (GEMM,
-- attention), the FP32 vector peak for elementwise ops, and the DRAM bandwidth.
CREATE OR REPLACE TEMP VIEW xsp_op_roof AS
SELECT
    -- Run.
    o.run_id,
    -- The op span (xsp_op_perf).
    o.span_id,
    -- Its roof: peak FLOP/s of its precision (matrix ops) or the vector peak.
    CASE WHEN o.unit = 'matrix' THEN mp.peak_flops ELSE d.peak_flops END AS peak_flops,
    -- Peak DRAM bytes/s of its device.
    d.peak_dram_bytes_per_s
FROM xsp_op_perf AS o
LEFT JOIN devices AS d ON d.run_id = o.run_id AND d.device_id = o.device_id
LEFT JOIN xsp_matrix_peaks AS mp ON mp.run_id = o.run_id AND mp.device_id = o.device_id AND mp.precision = o.precision;
