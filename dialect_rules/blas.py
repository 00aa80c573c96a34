"""Dot products: Dot, the BLAS-shaped Ops (Dot22, Dot22Scalar, Gemm, Gemv, Ger), BatchedDot,
and the batched Dot that `Blockwise` (matmul) applies.

All go through `builders.dot_general`: numpy's arithmetic, highest precision.
Gemm/Gemv ignore `z`/`y` when `beta == 0`, as BLAS does and PyTensor relies on
(a NaN there does not leak into the result).
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


def _scaled_update(product, alpha, beta, acc):
    """beta * acc + alpha * product, with acc ignored when beta == 0 (BLAS semantics)."""
    scaled = hlo.multiply(splat(alpha, product), product)
    beta = convert(beta, value_dtype(product))
    updated = hlo.add(hlo.multiply(splat(beta, acc), acc), scaled)
    # A 0-d predicate selects whole tensors.
    return select(compare(beta, full_like(beta, 0), "EQ"), scaled, updated)


@register_lowering(Gemm)
def lower_gemm(ctx, node, z, a, x, y, b):
    product = dot_general(x, y, ((1,), (0,)), dtype=_out_dtype(node))
    dims = shape_of(product)
    z_static = static_shape(z.type)
    # z may be broadcastable against the product (PyTensor's Gemm broadcasts it).
    out_dims = [dims[i] if z_static[i] == 1 else dim_size(z, i) for i in range(2)]
    z = broadcast_to(z, out_dims)
    product = broadcast_to(product, out_dims)
    return _scaled_update(product, a, b, z)


@register_lowering(Gemv)
def lower_gemv(ctx, node, y, alpha, a, x, beta):
    product = dot_general(a, x, ((1,), (0,)), dtype=_out_dtype(node))
    return _scaled_update(product, alpha, beta, y)


@register_lowering(Ger)
def lower_ger(ctx, node, a, alpha, x, y):
    rows, cols = shape_of(a)
    dtype = _out_dtype(node)
    outer = hlo.multiply(
        broadcast_in_dim(convert(x, dtype), (rows, cols), (0,)),
        broadcast_in_dim(convert(y, dtype), (rows, cols), (1,)),
    )
    return hlo.add(a, hlo.multiply(splat(alpha, outer), outer))
