"""DimShuffle, Reshape (and Blockwise(Reshape)), JoinDims, SplitDims, Shape, Shape_i, SpecifyShape."""

from __future__ import annotations

import numpy as np
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.tensor.elemwise import DimShuffle
from pytensor.tensor.reshape import JoinDims, SplitDims
from pytensor.tensor.shape import Reshape, Shape, Shape_i, SpecifyShape

from lowering.builders import (
    add_all,
    all_of,
    any_of,
    broadcast_in_dim,
    compare,
    convert,
    dim_product,
    dim_size,
    dim_value,
    divide,
    fit_static_dims,
    full_like,
    ir_constant,
    multiply_all,
    reshape,
    select,
    shape_of,
    shape_tensor,
    splat,
    transpose,
    vector_element,
    with_static_dims,
)
from lowering.regions import any_true, fold
from lowering.registry import register_batched, register_lowering


@register_lowering(DimShuffle)
def lower_dimshuffle(ctx, node, x):
    op = node.op
    kept = [i for i in op.new_order if i != "x"]
    dropped = [i for i in range(node.inputs[0].type.ndim) if i not in kept]
    y = transpose(x, kept + dropped)  # dropped dims are size 1: the reshape removes them
    static = node.outputs[0].type.shape
    if not dropped and len(kept) == len(op.new_order):
        # A permutation alone: the transpose, which a dot_general reading it can fold.
        return with_static_dims(y, static)
    dims = tuple(
        1 if i == "x" else (static[k] if static[k] is not None else dim_size(x, i))
        for k, i in enumerate(op.new_order)
    )
    return reshape(y, dims)


@register_lowering(Reshape)
def lower_reshape(ctx, node, x, shape):
    static = node.outputs[0].type.shape
    if all(d is not None for d in static):
        return reshape(x, static)
    entries = [vector_element(shape, i) for i in range(node.op.ndim)]  # (make_node fixes the length)
    return reshape(x, _requested_dims(ctx, static, entries, dim_value(dim_product(shape_of(x)))))


@register_batched(Reshape)
def lower_batched_reshape(ctx, node, batch_ndim, x, shape):
    """Blockwise(Reshape) (PyTensor's einsum builds them with one shape per batch entry):
    a tensor has one core shape, so one reshape serves the whole batch once every entry
    asks for the same shape; entries that differ raise (numpy could not stack their
    results either). An empty batch asks for none: its core dims are (size, 1, ...)."""
    dims = list(shape_of(x))
    batch, core = dims[:batch_ndim], dims[batch_ndim:]
    static = node.outputs[0].type.shape
    if all(d is not None for d in static[batch_ndim:]):
        return reshape(x, [*batch, *static[batch_ndim:]])
    size = dim_value(dim_product(core))
    # Each entry's request resolved (its -1 inferred) before the entries are compared.
    unknown = compare(shape, full_like(shape, 0), "LT")
    known = fold(select(unknown, full_like(shape, 1), shape), [batch_ndim], hlo.multiply, 1)
    inferred = broadcast_in_dim(divide(splat(size, known), known), shape_of(shape), range(batch_ndim))
    resolved = select(unknown, inferred, shape)
    axes = range(batch_ndim)
    lowest = fold(resolved, axes, hlo.minimum, np.iinfo(np.int64).max)
    highest = fold(resolved, axes, hlo.maximum, np.iinfo(np.int64).min)
    empty = compare(dim_value(dim_product(batch)), ir_constant(np.int64(0)), "EQ")
    ctx.runtime_check(all_of(hlo.not_(empty), any_true(compare(lowest, highest, "NE"))), ValueError,
                      "Reshape: the batch entries ask for different shapes")
    # Per component, an entry's number where any gives one, else their -1 (numpy's
    # errors about the request then come from `_requested_dims`).
    request = fold(shape, axes, hlo.maximum, np.iinfo(np.int64).min)
    entries = [select(empty, ir_constant(np.int64(-1 if i == 0 else 1)), vector_element(request, i))
               for i in range(node.op.core_op.ndim)]
    return reshape(x, [*batch, *_requested_dims(ctx, static[batch_ndim:], entries, size)])


def _requested_dims(ctx, static, entries, size) -> list:
    """np.reshape's dims for the requested `entries` (0-d i64) of an array of `size`
    elements: a negative entry (one at most) is the size divided by the product of the
    others. numpy's errors are checked at call time; where one fires, the dims become
    (size, 1, ...), so that the runtime still has valid shapes to specialize."""
    zero, one = ir_constant(np.int64(0)), ir_constant(np.int64(1))
    unknown = [compare(e, zero, "LT") for e in entries]
    n_unknown = add_all(*[convert(u, "int64") for u in unknown])
    known = multiply_all(*[select(u, one, e) for u, e in zip(unknown, entries)])
    inferred = divide(size, known)  # (known = 0: XLA's -1, and the check below fires)
    fits = select(
        compare(n_unknown, one, "EQ"),
        all_of(compare(known, zero, "NE"), compare(hlo.multiply(inferred, known), size, "EQ")),
        compare(known, size, "EQ"),
    )
    too_many = compare(n_unknown, one, "GT")
    ctx.runtime_check(too_many, ValueError, "Reshape: can only specify one unknown dimension")
    ctx.runtime_check(hlo.not_(any_of(fits, too_many)), ValueError,
                      "Reshape: cannot reshape the array into the requested shape (the sizes differ)")
    ok = all_of(fits, hlo.not_(too_many))
    fallback = [size if i == 0 else one for i in range(len(entries))]
    return [
        s if s is not None else select(ok, select(u, inferred, e), f)
        for s, e, u, f in zip(static, entries, unknown, fallback)
    ]


@register_lowering(JoinDims)
def lower_join_dims(ctx, node, x):
    """n_axes consecutive axes from start_axis merged into one (a reshape)."""
    start, stop = node.op.start_axis, node.op.start_axis + node.op.n_axes
    dims = shape_of(x)
    return reshape(x, [*dims[:start], dim_product(dims[start:stop]), *dims[stop:]])


@register_lowering(SplitDims)
def lower_split_dims(ctx, node, x, shape):
    """Axis `axis` reshaped to `shape` (a reshape; sizes from the output type where static)."""
    axis = node.op.axis
    dims = shape_of(x)
    count = node.outputs[0].type.ndim - node.inputs[0].type.ndim + 1
    static = node.outputs[0].type.shape[axis : axis + count]
    parts = [s if s is not None else convert(vector_element(shape, i), "int64") for i, s in enumerate(static)]
    return reshape(x, [*dims[:axis], *parts, *dims[axis + 1 :]])


@register_lowering(Shape)
def lower_shape(ctx, node, x):
    return shape_tensor(shape_of(x))


@register_lowering(Shape_i)
def lower_shape_i(ctx, node, x):
    return dim_value(dim_size(x, node.op.i))


@register_lowering(SpecifyShape)
def lower_specify_shape(ctx, node, x, *shape):
    """x, typed with the specified sizes; each is checked at call time, as PyTensor does
    (`fit_static_dims`: arguments of other sizes fail that check, not the module's shapes)."""
    for i, expected in enumerate(shape):
        if expected is None:
            continue
        actual = dim_value(dim_size(x, i))
        ctx.runtime_check(
            compare(actual, convert(expected, "int64"), "NE"),
            AssertionError,
            f"SpecifyShape: dim {i} of the input does not have the specified size",
        )
    return fit_static_dims(x, node.outputs[0].type.shape)
