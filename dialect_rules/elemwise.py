"""Elemwise and Composite: broadcast to the output shape, then apply the scalar rule."""

from __future__ import annotations

import functools

import pytensor.scalar as ps
from pytensor.graph.basic import Apply
from pytensor.tensor.elemwise import Elemwise

from lowering.builders import broadcast_in_dim, dim_size, full, with_static_dims
from lowering.graph import lower_node
from lowering.registry import register_lowering
from lowering.types import static_shape


def elemwise_shape(out_type, operands):
    """Output dims: PyTensor's static dims, else the first operand that is not broadcast.

    PyTensor never broadcasts at run time: only a dim that is statically 1 broadcasts,
    so any operand whose dim is not statically 1 has the output's size there.
    """
    dims = []
    for d, known in enumerate(out_type.shape):
        if known is not None:
            dims.append(known)
            continue
        candidates = [x for x in operands if static_shape(x.type)[d] != 1]
        static = [x for x in candidates if static_shape(x.type)[d] is not None]
        source = (static or candidates or [None])[0]
        dims.append(1 if source is None else dim_size(source, d))
    return tuple(dims)


def _needs_broadcast(x, ndim) -> bool:
    """Only a static 1 broadcasts (PyTensor has no run-time broadcasting)."""
    return 1 in static_shape(x.type)


def _broadcast_operand(x, dims):
    """Broadcast only operands with a static 1 where the output is not 1."""
    shape = static_shape(x.type)
    if all(s != 1 or d == 1 for s, d in zip(shape, dims)):
        return x
    return broadcast_in_dim(x, dims, range(len(dims)))


def scalar_apply(scalar_op, in_dtypes, out_dtypes) -> Apply:
    """The scalar node an Elemwise applies, with the tensor node's exact dtypes."""
    return _scalar_apply(scalar_op, tuple(in_dtypes), tuple(out_dtypes))


@functools.lru_cache(maxsize=4096)
def _scalar_apply(scalar_op, in_dtypes, out_dtypes) -> Apply:
    # One node per (Op, dtypes): PyTensor records a stack trace for every variable it
    # makes, which took an eighth of the lowering time of long elementwise chains.
    return Apply(
        scalar_op,
        [ps.get_scalar_type(dt)() for dt in in_dtypes],
        [ps.get_scalar_type(dt)() for dt in out_dtypes],
    )


@register_lowering(Elemwise, inner_ops=lambda op: [op.scalar_op])
def lower_elemwise(ctx, node, *operands):
    out_type = node.outputs[0].type
    # PyTensor's static 1s decide broadcasting; its input types may know more than the IR.
    operands = [with_static_dims(x, i.type.shape) for x, i in zip(operands, node.inputs)]
    if any(_needs_broadcast(x, out_type.ndim) for x in operands):
        dims = elemwise_shape(out_type, operands)
        operands = [_broadcast_operand(x, dims) for x in operands]
    scalar_node = scalar_apply(
        node.op.scalar_op,
        [i.type.dtype for i in node.inputs],
        [o.type.dtype for o in node.outputs],
    )
    return tuple(lower_node(ctx, scalar_node, operands, own_location=False))


@register_lowering(ps.Composite)
def lower_composite(ctx, node, *operands):
    """The inner scalar graph, lowered by the graph walker on whole tensors."""
    fgraph = node.op.fgraph
    like = operands[0] if operands else None
    dims = static_shape(like.type) if like is not None else ()
    if like is not None and any(d is None for d in dims):
        dims = tuple(dim_size(like, i) for i in range(len(dims)))
    env = {
        c: full(c.data, dims, c.type.dtype)
        for c in inner_constants(fgraph)
    }
    return tuple(ctx.lower_graph(fgraph.inputs, fgraph.outputs, operands, env))


def inner_constants(fgraph):
    from pytensor.graph.basic import Constant

    seen = {}
    for node in fgraph.apply_nodes:
        for v in node.inputs:
            if isinstance(v, Constant):
                seen[v] = None
    for v in fgraph.outputs:
        if isinstance(v, Constant):
            seen[v] = None
    return list(seen)
