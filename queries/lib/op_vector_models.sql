-- lib/op_vector_models: the FLOP and byte formulas of the vector perf models (elementwise, norms,
-- reductions, softmax, fills, gathers) as macros over an op's element counts, which lib/op_perf
-- reads from the recorded shapes.
-- include:
--
-- From: their arguments only. The models, the ops they apply to and each formula's source:
-- xsp_trace/formats/aten_vector_models.py and docs/perf_models.md (TraceLens' formulas where it has
-- them, at AMD-AGI/TraceLens 171dd747).

-- FLOPs of an elementwise, reduction, softmax, fill or gather op over n elements of its operand.
CREATE OR REPLACE TEMP MACRO xsp_vector_flops(model, n) AS
    CASE model WHEN 'unary' THEN n WHEN 'reduce' THEN n WHEN 'scan' THEN n
               WHEN 'softmax' THEN 3 * n WHEN 'softmax_bwd' THEN 6 * n WHEN 'fill' THEN 0 WHEN 'gather' THEN 0
               -- subtract and square (the reduction is the aten::mean it runs inside, counted there);
               -- backward: subtract, scale by 2 (/ n), multiply by the gradient
               WHEN 'mse_loss' THEN 2 * n WHEN 'mse_loss_bwd' THEN 3 * n END;

-- Bytes of the same: bpe the operand's element size, bpe_second the second operand's (unary: an
-- out= or source tensor; gather: the indices), index_numel and row_numel a gather's indices and
-- elements per gathered row (mse_loss_bwd: row_numel the elements of grad_output).
CREATE OR REPLACE TEMP MACRO xsp_vector_bytes(model, n, bpe, bpe_second, index_numel, row_numel) AS
    CASE model WHEN 'unary' THEN n * bpe + n * coalesce(bpe_second, bpe)
               -- TraceLens reads the reduced dimensions from "Concrete Inputs" as numbers; the
               -- profiler writes text, so it always counts a one-element output
               WHEN 'reduce' THEN n * bpe + bpe WHEN 'scan' THEN 2 * n * bpe
               WHEN 'softmax' THEN 2 * n * bpe WHEN 'softmax_bwd' THEN 4 * n * bpe
               WHEN 'fill' THEN n * bpe
               -- indices read, rows read and written
               WHEN 'gather' THEN index_numel * bpe_second + 2 * index_numel * row_numel * bpe
               -- input and target read, the squared differences written; backward: input, target
               -- and grad_output read, the input's gradient written
               WHEN 'mse_loss' THEN 3 * n * bpe
               WHEN 'mse_loss_bwd' THEN 3 * n * bpe + row_numel * bpe END;

-- FLOPs of a norm over n elements with c channels (TraceLens' Normalization.flops_func and
-- flops_func_bwd; RMSNorm and RMSNormBwd): mask_input / mask_weight are output_mask[0] / [1].
CREATE OR REPLACE TEMP MACRO xsp_norm_flops(model, n, c, training, mask_input, mask_weight) AS
    CASE WHEN model = 'rms_norm' THEN n / c * (2 * c + 2) + 2 * n
         WHEN model = 'rms_norm_bwd'
         THEN 2 * n + CASE WHEN mask_input THEN 6 * n ELSE 0 END
              + CASE WHEN mask_weight THEN n + CASE WHEN n / c > 1 THEN n ELSE 0 END ELSE 0 END
         WHEN model LIKE '%_bwd'
         THEN c * (CASE WHEN training THEN 0 ELSE 3 END + 4 * n / c
                   + CASE WHEN NOT mask_input THEN 2 * n / c WHEN training THEN 5 * n / c ELSE 0 END)
         ELSE 6 * c + CASE WHEN training THEN 3 * n ELSE 0 END + 2 * n END;

-- Bytes of the same (TraceLens' Normalization.bytes_func and bytes_func_bwd; RMSNorm, RMSNormBwd),
-- every tensor at the activation's element size bpe.
CREATE OR REPLACE TEMP MACRO xsp_norm_bytes(model, n, c, bpe, training, mask_input, affine, norm_bias) AS
    CASE WHEN model = 'rms_norm' THEN 2 * n * bpe + c * bpe
         WHEN model = 'rms_norm_bwd' THEN 3 * n * bpe + 2 * c * bpe
         WHEN model LIKE '%_bwd'
         THEN n * bpe + n * bpe * CASE WHEN mask_input AND training THEN 2 ELSE 1 END
              + CASE WHEN training THEN c * bpe ELSE 0 END
              + CASE WHEN affine THEN c * bpe + CASE WHEN training THEN c * bpe * CASE WHEN norm_bias THEN 2 ELSE 1 END ELSE 0 END
                     ELSE 0 END
         ELSE 2 * n * bpe + (2 + CASE WHEN affine THEN 1 + CASE WHEN norm_bias THEN 1 ELSE 0 END ELSE 0 END
                             + CASE WHEN training THEN 2 ELSE 0 END) * c * bpe END;
