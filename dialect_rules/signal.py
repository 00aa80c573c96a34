"""signal: Convolve1d (np.convolve, "full" and "valid") as one `stablehlo.convolution`
(a batch of unknown size: one per entry, see `lower_batched_convolve1d`).

"valid" is the middle of "full" (`full[min(n, k) - 1 : max(n, k)]`), which is why numpy
may swap its arguments there; slicing the full result needs no swap, and a run-time
`full_mode` only moves the slice bounds.
"""

from __future__ import annotations

import numpy as np
from jax.extend.mlir import ir
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.tensor.basic import get_underlying_scalar_constant_value
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.signal.conv import Convolve1d

from dialect_rules.blockwise import lower_per_entry
from lowering.builders import (
    convert,
    dim_add,
    dim_max,
    dim_min,
    dim_size,
    dim_sub,
    dim_product,
    dim_value,
    ir_constant,
    is_static,
    reshape,
    result_type,
    select,
    shape_of,
    slice_axis,
)
from lowering.registry import register_batched, register_lowering

_NCW = dict(
    input_batch_dimension=0, input_feature_dimension=1, input_spatial_dimensions=[2],
    kernel_input_feature_dimension=1, kernel_output_feature_dimension=0, kernel_spatial_dimensions=[2],
    output_batch_dimension=0, output_feature_dimension=1, output_spatial_dimensions=[2],
)


def full_convolution(a, v, dtype):
    """np.convolve(a[b], v[b], "full") for each row b of two (B, n), (B, k) matrices, in
    `dtype` (bools: any of the products). Rows are feature groups of one convolution."""
    compute = "int32" if np.dtype(dtype) == np.bool_ else dtype
    a, v = convert(a, compute), convert(v, compute)
    (batch, n), k = shape_of(a), dim_size(v, 1)
    length = dim_sub(dim_add(n, k), 1)
    lhs = reshape(a, [1, batch, n])
    rhs = reshape(hlo.reverse(v, ir.DenseI64ArrayAttr.get([1])), [batch, 1, k])  # XLA correlates
    numbers = hlo.ConvDimensionNumbers.get(**_NCW)
    out_type = result_type([1, batch, length], compute)
    highest = ir.ArrayAttr.get([hlo.PrecisionAttr.get("HIGHEST")] * 2)
    if isinstance(k, int):
        pad = ir.DenseIntElementsAttr.get(np.array([[k - 1, k - 1]], dtype=np.int64))
        out = hlo.convolution(out_type, lhs, rhs, numbers, batch, 1, padding=pad, precision_config=highest)
    else:
        edge = reshape(dim_sub(k, 1), [1, 1])
        out = hlo.dynamic_conv(out_type, lhs, rhs, hlo.concatenate([edge, edge], 1), numbers, batch, 1,
                               precision_config=highest)
    return convert(reshape(out, [batch, length]), dtype), n, k, length


def _convolve(node, a, v, full_mode, full_mode_var, batch_dims):
    """Convolve1d over `batch_dims` leading dims (flattened into feature groups, so
    their product must be static)."""
    dtype = node.outputs[0].type.dtype
    batch = dim_product(batch_dims)
    rows_a = reshape(a, [batch, dim_size(a, len(batch_dims))])
    rows_v = reshape(v, [batch, dim_size(v, len(batch_dims))])
    full, n, k, length = full_convolution(rows_a, rows_v, dtype)
    valid_start, valid_end = dim_sub(dim_min(n, k), 1), dim_max(n, k)
    flag = _constant_flag(full_mode_var)
    if flag is not None:
        start, end = (0, length) if flag else (valid_start, valid_end)
    else:
        start = select(full_mode, ir_constant(np.int64(0)), dim_value(valid_start))
        end = select(full_mode, dim_value(length), dim_value(valid_end))
    return reshape(slice_axis(full, 1, start, end), [*batch_dims, dim_sub(end, start)])


def _constant_flag(var):
    try:
        return bool(get_underlying_scalar_constant_value(var))
    except NotScalarConstantError:
        return None


@register_lowering(Convolve1d)
def lower_convolve1d(ctx, node, a, v, full_mode):
    return _convolve(node, a, v, full_mode, node.inputs[2], [])


@register_batched(Convolve1d)
def lower_batched_convolve1d(ctx, node, batch_ndim, a, v, full_mode):
    """One grouped convolution where the batch size is static and every entry has the
    same mode; else (a feature group count is an attribute) one convolution per entry."""
    batch_dims = list(shape_of(a))[:batch_ndim]
    if not is_static(batch_dims) or _constant_flag(node.inputs[2]) is None:
        return lower_per_entry(ctx, node, [a, v, full_mode])
    return _convolve(node, a, v, full_mode, node.inputs[2], batch_dims)
