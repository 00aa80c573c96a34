"""DimShuffle, Reshape, Shape, Shape_i, SpecifyShape."""

from __future__ import annotations

from pytensor.tensor.elemwise import DimShuffle

from lowering.builders import dim_size, reshape, transpose
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
