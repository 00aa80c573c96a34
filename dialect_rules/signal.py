"""signal: Convolve1d (np.convolve) and Convolve2d (scipy.signal.convolve), "full" and
"valid", as one `stablehlo.convolution` (a batch of unknown size: one per entry, see
`lower_batched_convolve`).

"valid" is the middle of "full" (`full[min(n, k) - 1 : max(n, k)]` along each axis),
which is why numpy and scipy may swap their arguments there; slicing the full result
needs no swap, and a run-time `full_mode` only moves the slice bounds.
"""

from __future__ import annotations

import numpy as np
from jax.extend.mlir import ir
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.tensor.signal.conv import Convolve1d, Convolve2d

from dialect_rules.blockwise import lower_per_entry
from lowering.builders import (
    all_of,
    any_of,
    at_least_one,
    broadcast_in_dim,
    compare,
    convert,
    dim_add,
    dim_max,
    dim_min,
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
    static_slice,
)
from lowering.errors import UnsupportedParameterError
from lowering.graph import constant_scalar
from lowering.regions import any_true
from lowering.registry import register_batched, register_lowering


def _dimension_numbers(rank: int):
    """(batch, feature, *spatial) for input, kernel (out, in, ...) and output alike."""
    spatial = list(range(2, 2 + rank))
    return hlo.ConvDimensionNumbers.get(
        input_batch_dimension=0, input_feature_dimension=1, input_spatial_dimensions=spatial,
        kernel_input_feature_dimension=1, kernel_output_feature_dimension=0, kernel_spatial_dimensions=spatial,
        output_batch_dimension=0, output_feature_dimension=1, output_spatial_dimensions=spatial,
    )


def full_convolution(a, v, dtype, real_only=False):
    """The full convolution of a[b] and v[b] for each b of (B, *n) and (B, *k) arrays, in
    `dtype` (bools: any of the products). Entries are feature groups of one convolution.
    Returns it with the spatial dims n, k and the full lengths n + k - 1. `real_only`:
    a complex one as four real ones (XLA's GPU backend convolves real numbers only)."""
    if real_only and np.dtype(dtype).kind == "c":
        part = np.finfo(dtype).dtype.name
        a, v = convert(a, dtype), convert(v, dtype)
        (rr, ii, ri, ir_), *dims = zip(*[
            full_convolution(x, y, part) for x, y in (
                (hlo.real(a), hlo.real(v)), (hlo.imag(a), hlo.imag(v)),
                (hlo.real(a), hlo.imag(v)), (hlo.imag(a), hlo.real(v)),
            )
        ])
        return (hlo.complex(hlo.subtract(rr, ii), hlo.add(ri, ir_)), *(d[0] for d in dims))
    compute = "int32" if np.dtype(dtype) == np.bool_ else dtype
    a, v = convert(a, compute), convert(v, compute)
    batch, *ns = shape_of(a)
    ks = shape_of(v)[1:]
    lengths = [dim_sub(dim_add(n, k), 1) for n, k in zip(ns, ks)]
    lhs = reshape(a, [1, batch, *ns])
    flipped = hlo.reverse(v, ir.DenseI64ArrayAttr.get(list(range(1, 1 + len(ks)))))  # XLA correlates
    rhs = reshape(flipped, [batch, 1, *ks])
    numbers = _dimension_numbers(len(ns))
    out_type = result_type([1, batch, *lengths], compute)
    highest = ir.ArrayAttr.get([hlo.PrecisionAttr.get("HIGHEST")] * 2)
    if is_static(ks):
        pad = ir.DenseIntElementsAttr.get(np.array([[k - 1, k - 1] for k in ks], dtype=np.int64))
        out = hlo.convolution(out_type, lhs, rhs, numbers, batch, 1, padding=pad, precision_config=highest)
    else:
        edges = [reshape(dim_value(dim_sub(k, 1)), [1, 1]) for k in ks]  # (some k may be static)
        pad = hlo.concatenate([hlo.concatenate([e, e], 1) for e in edges], 0)
        out = hlo.dynamic_conv(out_type, lhs, rhs, pad, numbers, batch, 1, precision_config=highest)
    return convert(reshape(out, [batch, *lengths]), dtype), ns, ks, lengths


def _convolve(ctx, node, a, v, full_mode, batch_dims):
    """Convolve1d/Convolve2d over `batch_dims` leading dims (flattened into feature
    groups, so their product must be static)."""
    dtype = node.outputs[0].type.dtype
    rank = len(shape_of(a)) - len(batch_dims)
    batch = dim_product(batch_dims)
    rows_a = reshape(a, [batch, *shape_of(a)[len(batch_dims):]])
    rows_v = reshape(v, [batch, *shape_of(v)[len(batch_dims):]])
    if ctx.can_raise():
        rows_a, rows_v = _refuse_empty(ctx, rows_a, rows_v, rank)
    on_gpu = ctx.on_gpu
    if on_gpu and np.dtype(dtype).kind in "biu":
        raise UnsupportedParameterError(
            node, f"{dtype} input on platform 'cuda'",
            "XLA's GPU backend has no integer convolution: lower it for platform 'cpu'",
        )
    full, ns, ks, lengths = full_convolution(rows_a, rows_v, dtype, real_only=on_gpu)
    flag = _constant_flag(node.inputs[2])
    if rank > 1 and flag is not True and ctx.can_raise():
        _refuse_undominated(ctx, ns, ks, full_mode if flag is None else None)
    out_dims = []
    for axis, (n, k, length) in enumerate(zip(ns, ks, lengths), start=1):
        valid_start, valid_end = dim_sub(dim_min(n, k), 1), dim_max(n, k)
        if flag is not None:
            start, end = (0, length) if flag else (valid_start, valid_end)
        else:
            start = select(full_mode, ir_constant(np.int64(0)), dim_value(valid_start))
            end = select(full_mode, dim_value(length), dim_value(valid_end))
        full = slice_axis(full, axis, start, end)
        out_dims.append(dim_sub(end, start))
    return reshape(full, [*batch_dims, *out_dims])


_EMPTY = {1: ("a cannot be empty", "v cannot be empty"), 2: ("in1 is empty", "in2 is empty")}


def _refuse_empty(ctx, a, v, rank):
    """np.convolve's errors for an empty `a` or `v` (checked in that order; scipy's
    for Convolve2d vary with the shapes, so the input is named), then each padded to at
    least one entry per axis so that the convolution stays valid IR."""
    dims = [*shape_of(a)[1:], *shape_of(v)[1:]]
    if all(isinstance(d, int) and d > 0 for d in dims):
        return a, v
    zero = ir_constant(np.int64(0))
    a_empty, v_empty = (
        any_of(*[compare(dim_value(d), zero, "EQ") for d in shape_of(x)[1:]]) for x in (a, v)
    )
    a_message, v_message = _EMPTY[rank]
    ctx.runtime_check(a_empty, ValueError, a_message)
    ctx.runtime_check(hlo.and_(v_empty, hlo.not_(a_empty)), ValueError, v_message)
    return tuple(at_least_one(x, range(1, len(shape_of(x)))) for x in (a, v))


def _refuse_undominated(ctx, ns, ks, full_mode):
    """scipy's "valid" needs one input at least as large as the other along every axis
    (`full_mode`: the run-time flag, when the mode is known only then)."""
    if is_static([*ns, *ks]) and (all(n >= k for n, k in zip(ns, ks)) or all(k >= n for n, k in zip(ns, ks))):
        return
    a_larger = all_of(*[compare(dim_value(n), dim_value(k), "GE") for n, k in zip(ns, ks)])
    v_larger = all_of(*[compare(dim_value(k), dim_value(n), "GE") for n, k in zip(ns, ks)])
    failed = hlo.not_(hlo.or_(a_larger, v_larger))
    if full_mode is not None:
        failed = hlo.and_(failed, hlo.not_(full_mode))
    ctx.runtime_check(
        failed, ValueError, "For 'valid' mode, one must be at least as large as the other in every dimension"
    )


def _constant_flag(var):
    value = constant_scalar(var)
    return None if value is None else bool(value)


@register_lowering(Convolve1d, Convolve2d)
def lower_convolve(ctx, node, a, v, full_mode):
    return _convolve(ctx, node, a, v, full_mode, [])


@register_batched(Convolve1d, Convolve2d)
def lower_batched_convolve(ctx, node, batch_ndim, a, v, full_mode):
    """One grouped convolution where the batch size is static; else (a feature group
    count is an attribute) one convolution per entry. A mode known only at run time
    (the gradient's, computed from shapes) must be the same for every entry."""
    batch_dims = list(shape_of(a))[:batch_ndim]
    run_time_mode = _constant_flag(node.inputs[2]) is None
    if not is_static(batch_dims) or (run_time_mode and not ctx.can_raise()):
        return lower_per_entry(ctx, node, [a, v, full_mode])
    if run_time_mode:
        full_mode = _one_mode(ctx, full_mode, dim_product(batch_dims))
    return _convolve(ctx, node, a, v, full_mode, batch_dims)


def _one_mode(ctx, flags, count):
    """The entries' run-time mode flag, refused unless they agree (their results would
    differ in length)."""
    if count == 0:
        return ir_constant(True)
    flags = reshape(flags, [count])
    first = reshape(static_slice(flags, [0], [1]), ())
    ctx.runtime_check(
        any_true(compare(flags, broadcast_in_dim(first, [count], []), "NE")), ValueError,
        "batch entries with different modes: their results would differ in length",
    )
    return first
