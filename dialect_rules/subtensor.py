"""Basic indexing: `Subtensor` with integer indices and slices, numpy semantics.

Indices and slice bounds known when lowering give static `slice`/`reverse`;
bounds that are run-time scalars give a `gather` of `start + step * iota(length)`
with numpy's clipping computed in the module. An integer index out of range
raises IndexError at call time, as numpy does.
"""

from __future__ import annotations

import numpy as np
from jax.extend.mlir import ir
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.graph.basic import Constant
from pytensor.tensor.subtensor import Subtensor

from lowering.builders import (
    compare,
    convert,
    dim_size,
    dim_value,
    full,
    ir_constant,
    iota,
    reshape,
    select,
    shape_of,
)
from lowering.registry import register_lowering


def _i64(v: int):
    return ir_constant(np.int64(v))


def _static(var):
    return int(var.data) if isinstance(var, Constant) else None


def _max(a, b):
    return hlo.maximum(a, b)


def _min(a, b):
    return hlo.minimum(a, b)


def _dynamic_slice_bounds(start, stop, step, n):
    """numpy's slice.indices(n) and the slice length, on 0-d i64 values."""
    zero, one, minus_one = _i64(0), _i64(1), _i64(-1)
    negative_step = compare(step, zero, "LT")
    lower = select(negative_step, minus_one, zero)
    upper = select(negative_step, hlo.subtract(n, one), n)

    def clip(bound, default):
        if bound is None:
            return default
        wrapped = select(compare(bound, zero, "LT"), hlo.add(bound, n), bound)
        return _min(_max(wrapped, lower), upper)

    start = clip(start, select(negative_step, upper, lower))
    stop = clip(stop, select(negative_step, lower, upper))
    # length = max(0, ceil((stop - start) / step)), written for either sign of step
    span = hlo.subtract(stop, start)
    length = hlo.divide(hlo.add(span, hlo.subtract(step, select(negative_step, minus_one, one))), step)
    return start, _max(length, zero)


def _gather_axis(x, axis, indices):
    """x taken along `axis` at the 1-d i64 `indices` (in range)."""
    rank = len(shape_of(x))
    dims = list(shape_of(x))
    dims[axis] = dim_size(indices, 0)
    slice_sizes = [1 if i == axis else d for i, d in enumerate(shape_of(x))]
    gather_dims = hlo.GatherDimensionNumbers.get(
        offset_dims=[i for i in range(rank) if i != axis],
        collapsed_slice_dims=[axis],
        operand_batching_dims=[],
        start_indices_batching_dims=[],
        start_index_map=[axis],
        index_vector_dim=1,
    )
    from lowering.builders import result_type, value_dtype

    out_type = result_type(dims, value_dtype(x))
    idx = reshape(indices, [dim_size(indices, 0), 1])
    if all(isinstance(s, int) for s in slice_sizes):
        return hlo.gather(x, idx, gather_dims, ir.DenseI64ArrayAttr.get(slice_sizes), results=[out_type])
    sizes = _shape_vector(slice_sizes)
    return hlo.dynamic_gather(x, idx, sizes, gather_dims, results=[out_type])


def _shape_vector(dims):
    from lowering.builders import shape_tensor

    return shape_tensor(dims)


@register_lowering(Subtensor)
def lower_subtensor(ctx, node, x, *index_operands):
    inputs = iter(zip(node.inputs[1:], index_operands))

    def take():
        var, value = next(inputs)
        return _static(var), convert(value, "int64")

    drop = []
    for axis, entry in enumerate(node.op.idx_list):
        n = dim_size(x, axis)
        if isinstance(entry, slice):
            parts = [None if p is None else take() for p in (entry.start, entry.stop, entry.step)]
            x = _slice_axis(ctx, x, axis, n, parts)
        else:
            static, value = take()
            x = _index_axis(ctx, x, axis, n, static, value)
            drop.append(axis)
    if drop:
        dims = [d for i, d in enumerate(shape_of(x)) if i not in drop]
        static = node.outputs[0].type.shape
        dims = [s if s is not None else d for s, d in zip(static, dims)]
        x = reshape(x, dims)
    return x


def _slice_axis(ctx, x, axis, n, parts):
    statics = [None if p is None else p[0] for p in parts]
    known = all(p is None or s is not None for p, s in zip(parts, statics))
    if known and isinstance(n, int):
        start, stop, step = slice(*statics).indices(n)
        return _static_slice(x, axis, start, stop, step)
    step = _i64(1) if parts[2] is None else parts[2][1]
    n = dim_value(n)
    start, length = _dynamic_slice_bounds(
        None if parts[0] is None else parts[0][1],
        None if parts[1] is None else parts[1][1],
        step, n,
    )
    static_step = 1 if parts[2] is None else statics[2]
    if static_step is not None:
        return _strided_slice(x, axis, n, start, length, static_step)
    # A run-time step of unknown sign: gather the positions numpy would visit.
    positions = hlo.add(
        hlo.multiply(iota([length], 0, "int64"), _broadcast(step, length)), _broadcast(start, length)
    )
    return _gather_axis(x, axis, positions)


def _strided_slice(x, axis, n, start, length, step):
    """`real_dynamic_slice` of `length` elements from `start` by a static `step`."""
    if step < 0:  # walk the reversed axis forwards
        x = hlo.reverse(x, ir.DenseI64ArrayAttr.get([axis]))
        start = hlo.subtract(hlo.subtract(n, _i64(1)), start)
        step = -step
    empty = compare(length, _i64(0), "EQ")
    start = select(empty, _i64(0), _min(_max(start, _i64(0)), n))
    span = hlo.add(hlo.multiply(hlo.subtract(length, _i64(1)), _i64(step)), _i64(1))
    limit = select(empty, start, hlo.add(start, span))
    shape = list(shape_of(x))
    rank = len(shape)
    begin = [_i64(0)] * rank
    begin[axis] = start
    ends = [dim_value(d) for d in shape]
    ends[axis] = limit
    strides = [1] * rank
    strides[axis] = step
    dims = list(shape)
    dims[axis] = length
    from lowering.builders import result_type, shape_tensor

    return hlo.real_dynamic_slice(
        result_type(dims, _dtype(x)), x, shape_tensor(begin), shape_tensor(ends), shape_tensor(strides)
    )


def _broadcast(scalar, length):
    from lowering.builders import broadcast_in_dim

    return broadcast_in_dim(scalar, [length], [])


def _static_slice(x, axis, start, stop, step):
    shape = list(shape_of(x))
    if step < 0:
        x = hlo.reverse(x, ir.DenseI64ArrayAttr.get([axis]))
        n = shape[axis]
        start, stop, step = n - 1 - start, n - 1 - stop, -step
    length = max(0, -(-(stop - start) // step))
    if length == 0:
        shape[axis] = 0
        return full(0, shape, _dtype(x))
    limit = start + (length - 1) * step + 1
    rank = len(shape)
    if not all(isinstance(d, int) for d in shape):
        begin = [_i64(0)] * rank
        begin[axis] = _i64(start)
        ends = [dim_value(d) for d in shape]
        ends[axis] = _i64(limit)
        strides = [1] * rank
        strides[axis] = step
        dims = list(shape)
        dims[axis] = length
        from lowering.builders import result_type, shape_tensor

        return hlo.real_dynamic_slice(
            result_type(dims, _dtype(x)), x, shape_tensor(begin), shape_tensor(ends),
            shape_tensor(strides),
        )
    starts = [0] * rank
    starts[axis] = start
    limits = list(shape)
    limits[axis] = limit
    strides = [1] * rank
    strides[axis] = step
    attr = ir.DenseI64ArrayAttr.get
    return hlo.slice(x, attr(starts), attr(limits), attr(strides))


def _dtype(x):
    from lowering.builders import value_dtype

    return value_dtype(x)


def _index_axis(ctx, x, axis, n, static, value):
    rank = len(shape_of(x))
    if static is not None and isinstance(n, int):
        if not -n <= static < n:
            ctx.runtime_check(
                ir_constant(np.True_), IndexError,
                f"index {static} is out of bounds for axis {axis} with size {n}",
            )
            static = 0
        return _static_slice(x, axis, static % n if n else 0, static % n + 1 if n else 0, 1)
    n = dim_value(n)
    zero = _i64(0)
    wrapped = select(compare(value, zero, "LT"), hlo.add(value, n), value)
    out_of_range = hlo.or_(compare(wrapped, zero, "LT"), compare(wrapped, n, "GE"))
    ctx.runtime_check(out_of_range, IndexError, f"index out of bounds for axis {axis}")
    starts = [zero] * rank
    starts[axis] = wrapped
    sizes = [1 if i == axis else d for i, d in enumerate(shape_of(x))]
    if all(isinstance(s, int) for s in sizes):
        return hlo.dynamic_slice(x, starts, ir.DenseI64ArrayAttr.get(sizes))
    indices = reshape(wrapped, [1])
    return _gather_axis(x, axis, indices)
