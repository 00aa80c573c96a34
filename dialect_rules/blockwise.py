"""Blockwise: a core Op over leading batch dims, lowered by the core Op's batched rule.

Batched rules (`register_batched`) emit one batched operation (a `dot_general` with
batch dims, a batched LAPACK call), never a loop over the batch. Batch dims broadcast
as in Elemwise: only a dim that is statically 1 broadcasts (PyTensor forbids run-time
broadcasting), so mismatched sizes fail when the call's shapes are specialized.
"""

from __future__ import annotations

from pytensor.tensor.blockwise import Blockwise

from lowering.builders import broadcast_in_dim, dim_size, shape_of
from lowering.errors import UnsupportedParameterError
from lowering.registry import lookup_batched_rule, lookup_rule, register_lowering
from lowering.types import static_shape


def _missing(op, node):
    if lookup_batched_rule(op.core_op) is not None:
        return None
    if _unbatched(node) and lookup_rule(op.core_op) is not None:
        return None
    return f"Blockwise({type(op.core_op).__name__})"


def _unbatched(node) -> bool:
    """No batch dims: the Blockwise is its core Op (inner graphs keep such nodes)."""
    return node.op.batch_ndim(node) == 0


def batch_dims(node, operands, batch_ndim):
    """The broadcast batch shape: static where PyTensor knows it, else from an operand
    whose dim is not statically 1."""
    dims = []
    for d, known in enumerate(node.outputs[0].type.shape[:batch_ndim]):
        if known is not None:
            dims.append(known)
            continue
        sources = [x for x in operands if static_shape(x.type)[d] != 1]
        dims.append(dim_size(sources[0], d) if sources else 1)
    return dims


def _inner_ops(op):
    # A core Op with an inner graph (OpFromGraph) is checked through it.
    return [op.core_op] if hasattr(op.core_op, "fgraph") else []


@register_lowering(Blockwise, missing=_missing, inner_ops=_inner_ops)
def lower_blockwise(ctx, node, *operands):
    rule = lookup_batched_rule(node.op.core_op)
    if rule is None and _unbatched(node) and lookup_rule(node.op.core_op) is not None:
        core_node = node.op.core_op.make_node(*node.inputs)
        return lookup_rule(node.op.core_op).fn(ctx, core_node, *operands)
    if rule is None:
        raise UnsupportedParameterError(
            node, f"core_op={node.op.core_op}", "no batched rule for this core Op"
        )
    batch_ndim = node.op.batch_ndim(node)
    if batch_ndim:
        dims = batch_dims(node, operands, batch_ndim)
        operands = [_broadcast_batch(x, dims) for x in operands]
    return rule(ctx, node, batch_ndim, *operands)


def _broadcast_batch(x, dims):
    shape = static_shape(x.type)
    if all(s != 1 or d == 1 for s, d in zip(shape, dims)):
        return x
    core = shape_of(x)[len(dims):]
    rank = len(shape)
    return broadcast_in_dim(x, list(dims) + list(core), range(rank))
