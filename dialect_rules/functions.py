"""OpFromGraph (and its subclasses: Pad, Einsum, KroneckerProduct, AllocDiag, ...): one
private func.func per inner graph, called where the Op is applied.

The default pipeline inlines the calls (`inline-private-calls`), so XLA sees one flat
module; the function boundary keeps raw IR readable and lowers each inner graph once.
Inputs that are constants where the Op is applied (pad widths, einsum shapes) are put
into the inner graph before lowering it, so shapes computed from them stay static.
Run-time checks in the body (an index out of range, an Assert) come back as extra
results and are raised by the caller, as in @main.
"""

from __future__ import annotations

import pytensor.tensor as pt
from pytensor.compile.builders import OpFromGraph
from pytensor.graph.basic import Apply, Constant
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.replace import _vectorize_node, clone_replace
from pytensor.graph.rewriting.basic import dfs_rewriter
from pytensor.graph.traversal import applys_between, graph_inputs, toposort, truncated_graph_inputs
from pytensor.raise_op import CheckAndRaise
from pytensor.scalar import IntDiv, Mod
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.pad import Pad
from pytensor.tensor.rewriting.blockwise import local_blockwise_alloc, local_useless_unbatched_blockwise
from pytensor.tensor.rewriting.subtensor import local_blockwise_inc_subtensor, local_blockwise_of_subtensor
from pytensor.tensor.shape import Shape, Shape_i
from pytensor.tensor.type import TensorType, discrete_dtypes

from dialect_rules.blockwise import lower_per_entry
from lowering.graph import find_unsupported, io_toposort, lower_function
from lowering.registry import lookup_batched_rule, register_batched, register_lowering
from lowering.rewrites import elemwise_of


def _symbol(op) -> str:
    return getattr(op, "name", None) or type(op).__name__


@register_lowering(OpFromGraph)
def lower_op_from_graph(ctx, node, *operands):
    inner = node.op.fgraph
    constant = [i for i, v in enumerate(node.inputs) if isinstance(v, Constant)]
    key = ("OpFromGraph", node.op, tuple((i, node.inputs[i].signature()) for i in constant))
    fn = ctx.memo.get(key)
    if fn is None:
        inputs, outputs = list(inner.inputs), list(inner.outputs)
        bound = {inner.inputs[i]: node.inputs[i] for i in constant}
        if isinstance(node.op, Pad) and node.op.pad_mode in _PERIODIC_PADS:
            outputs = [_checked_periodic_pad(node.op.pad_mode, *[bound.get(v, v) for v in inputs[:2]],
                                             _divisors_at_least_one(outputs[0]))]
        if constant:
            outputs = clone_replace(outputs, replace=bound)
            inputs = [v for i, v in enumerate(inputs) if i not in constant]
        fn = ctx.memo[key] = lower_function(ctx, inputs, outputs, _symbol(node.op))
    operands = [x for i, x in enumerate(operands) if i not in constant]
    return tuple(ctx.call_function(fn, operands, len(node.outputs)))


# Pad modes that PyTensor builds from copies of the axis (a Scan of them for reflect and
# symmetric), sized by divisions by the axis length (less one, for reflect).
_PERIODIC_PADS = ("reflect", "symmetric", "wrap")


def _checked_periodic_pad(mode: str, x, pad_width, padded):
    """`padded` (PyTensor's graph) behind the checks its sizes need, raised as ValueErrors.

    Where those divisions are by zero, the Python mode raises ZeroDivisionError (or an
    OverflowError); here integer division by zero gives 0, as numpy's arrays do, and the
    result had the wrong shape: `pad([3.0], 2, mode="reflect")` was `[3.0]`, and a padded
    empty axis stayed empty. An empty axis padded in these modes is numpy's ValueError;
    reflect of a length-1 axis, which numpy repeats, PyTensor's graph cannot build."""
    widths = pt.broadcast_to(pad_width, (x.ndim, 2)).sum(axis=1)
    for axis in range(x.ndim):
        size, padded_here = x.shape[axis], pt.gt(widths[axis], 0)
        empty = f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'"
        padded = CheckAndRaise(ValueError, empty)(padded, pt.or_(pt.gt(size, 0), pt.bitwise_not(padded_here)))
        if mode == "reflect":
            single = (f"mode='reflect' cannot pad axis {axis}, of length 1, in PyTensor's Pad (its "
                      "reflection has no other entry); numpy repeats the entry, as mode='edge' does")
            padded = CheckAndRaise(ValueError, single)(padded, pt.or_(pt.neq(size, 1), pt.bitwise_not(padded_here)))
    return padded


def _divisors_at_least_one(output):
    """`output` with the divisor of each integer division and remainder in its graph
    (not in its Scans') raised to at least 1. Where a divisor is 0 the pad's checks
    raise, but the shapes computed from that division must still be shapes: with run-time
    widths the module is specialized to them before it runs, and a quotient by 0 did not
    fold (an MLIR message about a dynamically shaped constant, not the checks' error).
    Elsewhere the results are the same."""
    divisions = {
        node.outputs[0]: node.op(node.inputs[0], pt.maximum(node.inputs[1], 1))
        for node in applys_between(graph_inputs([output]), [output])
        if elemwise_of(node, IntDiv | Mod) and node.inputs[1].type.dtype in discrete_dtypes
    }
    return clone_replace(output, replace=divisions) if divisions else output


@register_batched(OpFromGraph)
def lower_batched_op_from_graph(ctx, node, batch_ndim, *operands):
    """Blockwise(OpFromGraph): the inner graph vectorized over the batch dims (its Ops
    become their Blockwise forms, `_vectorize`), lowered once, where each of those has
    a batched rule; otherwise the inner graph per batch entry."""
    core = node.op.core_op
    key = ("BatchedOpFromGraph", core, batch_ndim)
    if key not in ctx.memo:
        inner = core.fgraph
        batched = [
            TensorType(v.type.dtype, shape=(None,) * batch_ndim + v.type.shape)() for v in inner.inputs
        ]
        outputs = _vectorize(list(inner.outputs), dict(zip(inner.inputs, batched)))
        ctx.memo[key] = (
            lower_function(ctx, batched, outputs, _symbol(core) + "_batched")
            if _batched_throughout(batched, outputs) else None
        )
    fn = ctx.memo[key]
    if fn is None:
        return lower_per_entry(ctx, node, operands)
    return tuple(ctx.call_function(fn, list(operands), len(node.outputs)))


# PyTensor's rewrites of the Blockwise Ops a vectorized graph has where its sizes are the
# same for every entry: into plain Ops over the whole batch.
_UNBATCH = dfs_rewriter(
    local_useless_unbatched_blockwise, local_blockwise_alloc, local_blockwise_of_subtensor,
    local_blockwise_inc_subtensor,
)


def _vectorize(outputs, replace):
    """PyTensor's `vectorize_graph`, except that shapes stay unbatched.

    Every entry of a batched tensor has the same core shape, but PyTensor's vectorized
    `Shape` broadcasts it over the batch, so a size computed from it (an `eye(m)`, a
    slice's stop) is a value per entry and its Op a Blockwise with no batched rule
    (`_batched_throughout`). Kept unbatched, the sizes leave Blockwise Ops that
    PyTensor's own rewrites (`_UNBATCH`) make plain ones over the batch.
    """
    # The loop of PyTensor's vectorize_graph, with its (private) per-node dispatch.
    inputs = truncated_graph_inputs(outputs, ancestors_to_include=replace.keys())
    batched = {v: replace.get(v, v) for v in inputs}
    for node in toposort(outputs, blockers=inputs):
        operands = [batched.get(v, v) for v in node.inputs]
        if isinstance(node.op, Shape | Shape_i):
            (x,) = operands
            core = x.shape[x.type.ndim - node.inputs[0].type.ndim:]
            results = [core] if isinstance(node.op, Shape) else [core[node.op.i]]
        else:
            results = _vectorize_node(node.op, node, *operands)
            results = results.outputs if isinstance(results, Apply) else results
        batched.update(zip(node.outputs, results))
    vectorized = [batched[v] for v in outputs]
    graph = FunctionGraph(outputs=vectorized, clone=False)
    _UNBATCH.rewrite(graph)
    return list(graph.outputs)


def _batched_throughout(inputs, outputs) -> bool:
    """Whether every Op of a vectorized graph lowers as a whole batch: a Blockwise with
    no batched rule would run per entry, and its per-entry sizes (`eye(n)` with a
    batched n) are often values, not shapes."""
    nodes = io_toposort(inputs, outputs)
    if find_unsupported(nodes):
        return False
    return all(
        not isinstance(n.op, Blockwise) or n.op.batch_ndim(n) == 0 or lookup_batched_rule(n.op.core_op)
        for n in nodes
    )
