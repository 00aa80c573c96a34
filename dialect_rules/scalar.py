"""Scalar Ops (inside Elemwise and Composite), applied to whole tensors of one shape.

Families are tables plus one generic rule each; every rule returns exactly the
dtype PyTensor's output has, computing in the dtype numpy would.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytensor.scalar as ps
from jax.extend.mlir.dialects import stablehlo as hlo

from lowering.builders import convert
from lowering.registry import register_lowering


def out_dtype(node, i: int = 0) -> str:
    return node.outputs[i].type.dtype


def _nary(builder, ctx, node, *xs):
    """Cast every operand to the output dtype, then apply `builder`."""
    dtype = out_dtype(node)
    return builder(*[convert(x, dtype) for x in xs])


for _op, _builder in {
    ps.Add: hlo.add,
    ps.Mul: hlo.multiply,
    ps.Sub: hlo.subtract,
    ps.Exp: hlo.exponential,
}.items():
    register_lowering(_op)(partial(_nary, _builder))


@register_lowering(ps.TrueDiv)
def lower_true_div(ctx, node, x, y):
    dtype = out_dtype(node)
    return hlo.divide(convert(x, dtype), convert(y, dtype))


@register_lowering(ps.Cast, ps.Identity)
def lower_cast(ctx, node, x):
    return convert(x, out_dtype(node))
