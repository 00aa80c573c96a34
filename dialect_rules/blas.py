"""Dot products: Dot, the BLAS-shaped Ops (Dot22, Dot22Scalar, Gemm, Gemv, Ger), BatchedDot,
and the batched Dot that `Blockwise` (matmul) applies.

All go through `builders.dot_general`: numpy's arithmetic, highest precision.
Gemm, Gemv and Ger keep the special cases of their `perform` (numpy for Gemm, scipy's
BLAS for Gemv and Ger) as selects on the run-time scalars: they differ from the plain
formula beyond rounding when a value is infinite or NaN, e.g. `z`/`y` ignored when
`beta == 0`, and for complex `(1 + 0j) * (inf + 0j)` is `inf + nan j`.
"""

from __future__ import annotations

from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.tensor.blas import BatchedDot, Dot22, Dot22Scalar, Gemm, Gemv, Ger
from pytensor.tensor.math import Dot

from lowering.builders import (
    broadcast_in_dim,
    broadcast_to,
    compare,
    convert,
    dim_size,
    dot_general,
    full_like,
    select,
    shape_of,
    splat,
    value_dtype,
)
from lowering.registry import register_batched, register_lowering
from lowering.types import static_shape


def _out_dtype(node) -> str:
    return node.outputs[0].type.dtype


@register_lowering(Dot, Dot22)
def lower_dot(ctx, node, x, y):
    return dot_general(x, y, ((1,), (0,)), dtype=_out_dtype(node))


@register_batched(Dot)
def lower_batched_dot(ctx, node, batch_ndim, x, y):
    batch = tuple(range(batch_ndim))
    return dot_general(x, y, ((batch_ndim + 1,), (batch_ndim,)), (batch, batch), dtype=_out_dtype(node))


@register_lowering(BatchedDot)
def lower_batched_dot_op(ctx, node, x, y):
    # Batch sizes that differ fail when the call's shapes are specialized (ValueError
    # naming this node) before anything runs, so no run-time check is needed.
    return dot_general(x, y, ((2,), (1,)), ((0,), (0,)), dtype=_out_dtype(node))


@register_lowering(Dot22Scalar)
def lower_dot22_scalar(ctx, node, x, y, a):
    product = dot_general(x, y, ((1,), (0,)), dtype=_out_dtype(node))
    return hlo.multiply(splat(a, product), product)


def _equals(scalar, number):
    """`scalar == number`, a 0-d predicate (it selects whole tensors)."""
    return compare(scalar, full_like(scalar, number), "EQ")


def _scale(scalar, x):
    """scalar * x, the scalar in x's dtype (as scipy's BLAS wrappers cast it)."""
    return hlo.multiply(splat(scalar, x), x)


def _gemm_update(z, alpha, product, beta):
    """Gemm.perform: beta * z + alpha * product with its branches on beta in {0, 1} and,
    inside them, alpha in {1, -1} (the product unscaled or negated)."""
    alpha, beta = convert(alpha, value_dtype(z)), convert(beta, value_dtype(z))
    scaled = _scale(alpha, product)
    signed = select(_equals(alpha, 1), product, select(_equals(alpha, -1), hlo.negate(product), scaled))
    general = hlo.add(_scale(beta, z), scaled)
    return select(_equals(beta, 0), signed, select(_equals(beta, 1), hlo.add(z, signed), general))


def _gemv_update(y, alpha, product, beta):
    """What scipy's gemv gives: y ignored when beta == 0 and unscaled when beta == 1, the
    product unscaled when alpha == 1 (alpha == 0 still reads A and x)."""
    alpha, beta = convert(alpha, value_dtype(y)), convert(beta, value_dtype(y))
    kept = select(_equals(beta, 1), y, select(_equals(beta, 0), full_like(y, 0), _scale(beta, y)))
    return hlo.add(kept, select(_equals(alpha, 1), product, _scale(alpha, product)))


@register_lowering(Gemm)
def lower_gemm(ctx, node, z, a, x, y, b):
    product = dot_general(x, y, ((1,), (0,)), dtype=_out_dtype(node))
    dims = shape_of(product)
    z_static = static_shape(z.type)
    # z may be broadcastable against the product (PyTensor's Gemm broadcasts it).
    out_dims = [dims[i] if z_static[i] == 1 else dim_size(z, i) for i in range(2)]
    z = broadcast_to(z, out_dims)
    product = broadcast_to(product, out_dims)
    return _gemm_update(z, a, product, b)


@register_lowering(Gemv)
def lower_gemv(ctx, node, y, alpha, a, x, beta):
    product = dot_general(a, x, ((1,), (0,)), dtype=_out_dtype(node))
    return _gemv_update(y, alpha, product, beta)


@register_lowering(Ger)
def lower_ger(ctx, node, a, alpha, x, y):
    # scipy's ger returns A untouched when alpha == 0 (an inf or NaN in x, y is not read),
    # and scales x before the outer product, as it does for the C-ordered A it is given.
    rows, cols = shape_of(a)
    dtype = _out_dtype(node)
    x = _scale(alpha, convert(x, dtype))
    outer = hlo.multiply(
        broadcast_in_dim(x, (rows, cols), (0,)), broadcast_in_dim(convert(y, dtype), (rows, cols), (1,))
    )
    return select(_equals(convert(alpha, dtype), 0), a, hlo.add(a, outer))
