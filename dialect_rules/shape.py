"""DimShuffle, Reshape, JoinDims, SplitDims, Shape, Shape_i, SpecifyShape."""

from __future__ import annotations

import numpy as np
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.tensor.elemwise import DimShuffle
from pytensor.tensor.reshape import JoinDims, SplitDims
from pytensor.tensor.shape import Reshape, Shape, Shape_i, SpecifyShape

from lowering.builders import (
    compare,
    convert,
    dim_product,
    dim_size,
    dim_value,
    ir_constant,
    reshape,
    select,
    shape_of,
    shape_tensor,
    transpose,
    vector_element,
)
from lowering.registry import register_lowering


@register_lowering(DimShuffle)
def lower_dimshuffle(ctx, node, x):
    op = node.op
    kept = [i for i in op.new_order if i != "x"]
    dropped = [i for i in range(node.inputs[0].type.ndim) if i not in kept]
    y = transpose(x, kept + dropped)  # dropped dims are size 1: the reshape removes them
    static = node.outputs[0].type.shape
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
    entries = [vector_element(shape, i) for i in range(node.op.ndim)]
    minus_one = ir_constant(np.int64(-1))
    one = ir_constant(np.int64(1))
    # numpy's -1: the one unknown entry is the size divided by the product of the others
    known = dim_product([select(compare(e, minus_one, "EQ"), one, e) for e in entries])
    inferred = hlo.divide(dim_value(dim_product(shape_of(x))), dim_value(known))
    dims = [
        s if s is not None else select(compare(e, minus_one, "EQ"), inferred, e)
        for s, e in zip(static, entries)
    ]
    return reshape(x, dims)


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
    """x itself; each specified dim is checked at call time, as PyTensor does."""
    for i, expected in enumerate(shape):
        if expected is None:
            continue
        actual = dim_value(dim_size(x, i))
        ctx.runtime_check(
            compare(actual, convert(expected, "int64"), "NE"),
            AssertionError,
            f"SpecifyShape: dim {i} of the input does not have the specified size",
        )
    return x
