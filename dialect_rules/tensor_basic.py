"""Alloc, AllocEmpty, DeepCopyOp, TensorFromScalar, ScalarFromTensor, MakeVector, Join."""

from __future__ import annotations

from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.compile.ops import DeepCopyOp
from pytensor.graph.basic import Constant
from pytensor.tensor.basic import (
    Alloc,
    AllocEmpty,
    Join,
    MakeVector,
    ScalarFromTensor,
    TensorFromScalar,
)

from lowering.builders import broadcast_to, convert, full, reshape
from lowering.errors import UnsupportedParameterError
from lowering.registry import register_lowering


def _dims(node, shape):
    """Output dims: PyTensor's static sizes, else the run-time scalar shape inputs."""
    return [
        s if s is not None else convert(v, "int64")
        for s, v in zip(node.outputs[0].type.shape, shape)
    ]


@register_lowering(Alloc)
def lower_alloc(ctx, node, value, *shape):
    value = convert(value, node.outputs[0].type.dtype)
    return broadcast_to(value, _dims(node, shape))


@register_lowering(AllocEmpty)
def lower_alloc_empty(ctx, node, *shape):
    # Uninitialized memory in PyTensor; zeros here, so results never depend on garbage.
    return full(0, _dims(node, shape), node.outputs[0].type.dtype)


@register_lowering(DeepCopyOp)
def lower_deep_copy(ctx, node, x):
    return x  # every XLA result is a fresh buffer


@register_lowering(TensorFromScalar, ScalarFromTensor)
def lower_scalar_tensor(ctx, node, x):
    return convert(x, node.outputs[0].type.dtype)


@register_lowering(MakeVector)
def lower_make_vector(ctx, node, *elements):
    dtype = node.outputs[0].type.dtype
    if not elements:
        return full(0, [0], dtype)
    parts = [reshape(convert(e, dtype), [1]) for e in elements]
    return hlo.concatenate(parts, 0)


@register_lowering(Join)
def lower_join(ctx, node, axis, *tensors):
    if not isinstance(node.inputs[0], Constant):
        raise UnsupportedParameterError(node, "a run-time axis", "the concatenation axis must be constant")
    ndim = node.outputs[0].type.ndim
    dtype = node.outputs[0].type.dtype
    return hlo.concatenate([convert(t, dtype) for t in tensors], int(node.inputs[0].data) % ndim)
