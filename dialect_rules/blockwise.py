"""Blockwise: a core Op over leading batch dims.

Batched rules (`register_batched`) emit one batched operation (a `dot_general` with
batch dims, a batched LAPACK call). A core Op with a rule of its own but no batched
rule (`Eye` with a diagonal per entry, `x[i]` with an `i` per entry, an `OpFromGraph`
whose vectorized graph holds Ops like these) runs once per batch entry in a `stablehlo.while`, as `Blockwise.perform`
does: its rule is lowered once into a private function, called on entry i's operands,
and each result is written at entry i of the outputs. Such a loop needs each entry's
core output shapes from the inputs' shapes alone; core shapes that depend on input
values (`eye(n)` with a batched `n`) are refused when lowering.

Batch dims broadcast as in Elemwise: only a dim that is statically 1 broadcasts
(PyTensor forbids run-time broadcasting). Sizes known at run time only are checked
against each other as perform checks them (ValueError), and a batched rule's operands
are broadcast to one batch shape first, so a mismatch that cannot broadcast fails when
the call's shapes are specialized, before any LAPACK call reads past an input.
"""

from __future__ import annotations

import functools

import numpy as np
from jax.extend.mlir import ir
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.graph.basic import Constant
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.traversal import walk
from pytensor.tensor.basic import constant
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.optimize import ScipyWrapperOp
from pytensor.tensor.rewriting.shape import ShapeFeature
from pytensor.tensor.shape import Shape, Shape_i
from pytensor.tensor.type import tensor

from lowering.builders import (
    at_least_one,
    broadcast_in_dim,
    compare,
    dim_product,
    dim_size,
    dim_value,
    divide,
    full,
    ir_constant,
    read_entry,
    remainder,
    shape_of,
    slice_axis,
    value_dtype,
    with_static_dims,
    write_entry,
)
from lowering.errors import UnsupportedParameterError
from lowering.graph import constant_scalar, lower_function
from lowering.regions import while_loop
from lowering.registry import lookup_batched_rule, lookup_rule, register_lowering
from lowering.types import static_shape


def _name(op) -> str:
    return f"Blockwise({type(op.core_op).__name__})"


def _missing(op, node):
    if lookup_batched_rule(op.core_op) is not None:
        return None
    core_rule = lookup_rule(op.core_op)
    if core_rule is None:
        return _name(op)
    if core_rule.missing is None:
        return None
    core_node = op._create_dummy_core_node(node.inputs)
    return None if core_rule.missing(op.core_op, core_node) is None else _name(op)


def _unbatched(node) -> bool:
    """No batch dims: the Blockwise is its core Op (inner graphs keep such nodes)."""
    return node.op.batch_ndim(node) == 0


def _sized(operands, d) -> list:
    """The operands whose batch dim d is not statically 1 (those that set its size)."""
    return [x for x in operands if static_shape(x.type)[d] != 1]


def batch_dims(node, operands, batch_ndim):
    """The broadcast batch shape: static where PyTensor knows it, else the first sized
    operand's."""
    dims = []
    for d, known in enumerate(node.outputs[0].type.shape[:batch_ndim]):
        if known is not None:
            dims.append(known)
            continue
        sized = _sized(operands, d)
        dims.append(dim_size(sized[0], d) if sized else 1)
    return dims


def _inner_ops(op):
    # A core Op with an inner graph (OpFromGraph) is checked through it.
    return [op.core_op] if hasattr(op.core_op, "fgraph") else []


@register_lowering(Blockwise, missing=_missing, inner_ops=_inner_ops)
def lower_blockwise(ctx, node, *operands):
    rule = lookup_batched_rule(node.op.core_op)
    if rule is None:
        if _unbatched(node):
            core_node = node.op.core_op.make_node(*node.inputs)
            return lookup_rule(node.op.core_op).fn(ctx, core_node, *operands)
        return lower_per_entry(ctx, node, operands)
    batch_ndim = node.op.batch_ndim(node)
    if batch_ndim and rule.broadcasts_batch:
        dims = batch_dims(node, operands, batch_ndim)
        _check_batch_dims(ctx, operands, dims)
        operands = [_broadcast_batch(x, dims, operands) for x in operands]
    return rule(ctx, node, batch_ndim, *operands)


def _broadcast_batch(x, dims, operands):
    """x with the batch dims `dims`: a static 1 broadcasts, and a `?` dim other than the
    one `batch_dims` read is tied to it, so that every operand of a batched rule has
    the same batch shape once the call is specialized (a LAPACK call checks none: a
    shorter batch would be read past its end)."""
    shape = static_shape(x.type)

    def as_is(d, s):
        if s is None:  # the operand batch_dims read the size from
            return not isinstance(dims[d], int) and x is _sized(operands, d)[0]
        return s != 1 or dims[d] == 1

    if all(as_is(d, s) for d, s in enumerate(shape[: len(dims)])):
        return x
    core = shape_of(x)[len(dims):]
    return broadcast_in_dim(x, list(dims) + list(core), range(len(shape)))


# --- one batch entry at a time ------------------------------------------------------------


def _uniform_constant(var, batch_ndim: int):
    """The core value of an input that is the same constant for every entry (batch dims
    all 1), or None. A 0-d core is looked for through PyTensor's folding (`ExpandDims`
    of a constant, as `vectorize_graph` leaves an unbatched size)."""
    if not all(var.type.broadcastable[:batch_ndim]):
        return None
    if isinstance(var, Constant):
        return var.data.reshape(var.data.shape[batch_ndim:])
    if var.type.ndim == batch_ndim:
        value = constant_scalar(var)
        return None if value is None else np.asarray(value, dtype=var.type.dtype)
    return None


def _core_function(ctx, node):
    """The core Op as a private function of the inputs that vary by entry (constant
    inputs are put in, so shapes computed from them stay static), and the positions of
    those inputs."""
    op = node.op
    core_inputs, params, varying = [], [], []
    for i, (var, sig) in enumerate(zip(node.inputs, op.inputs_sig, strict=True)):
        b = var.type.ndim - len(sig)
        value = _uniform_constant(var, b)
        if value is None:
            params.append(tensor(dtype=var.type.dtype, shape=var.type.shape[b:]))
            varying.append(i)
            core_inputs.append(params[-1])
        else:
            core_inputs.append(constant(value, dtype=var.type.dtype))
    constants = tuple((i, c.signature()) for i, c in enumerate(core_inputs) if i not in varying)
    key = ("BlockwiseEntry", op, tuple(v.type for v in node.inputs), constants)
    found = ctx.memo.get(key)
    if found is not None:
        return found, varying
    core_node = op.core_op.make_node(*core_inputs)
    _refuse_value_dependent_shapes(node, params, core_node.outputs, varying)
    name = type(op.core_op).__name__ + "_entry"
    fn = ctx.memo[key] = lower_function(ctx, params, core_node.outputs, name)
    return fn, varying


def _refuse_value_dependent_shapes(node, params, outputs, varying) -> None:
    """UnsupportedParameterError where PyTensor's shape inference computes a core output
    shape from an entry's values, not only from its shapes: the loop body could not be
    given static shapes. Shapes PyTensor cannot infer count as value-dependent."""
    fgraph = FunctionGraph(params, outputs, features=[ShapeFeature()], clone=True)
    _known_output_shapes(fgraph)
    inputs = {v: k for k, v in enumerate(fgraph.inputs)}

    def expand(var):
        owner = var.owner
        if owner is None or (isinstance(owner.op, (Shape, Shape_i)) and owner.inputs[0] in inputs):
            return None  # a graph input or constant, or an input's shape (known for every entry)
        return owner.inputs

    dims = [d for out in fgraph.outputs for d in fgraph.shape_feature.shape_of[out]]
    for var in walk(dims, expand):
        if var in inputs:
            position = varying[inputs[var]]
            raise UnsupportedParameterError(
                node, f"core output shapes computed from the values of input {position} "
                f"({node.inputs[position]})",
                "a Blockwise with no batched rule runs its core Op per batch entry, which "
                "needs core output shapes that follow from the input shapes",
            )


def _known_output_shapes(fgraph) -> None:
    """Output shapes PyTensor cannot infer but that follow from the inputs' shapes: a
    scipy optimizer's solution (`pytensor.tensor.optimize`, no `infer_shape`) has the
    shape of its start x."""
    feature = fgraph.shape_feature
    for node in fgraph.apply_nodes:
        if isinstance(node.op, ScipyWrapperOp):
            feature.set_shape(node.outputs[0], feature.shape_of[node.inputs[0]], override=True)


def lower_per_entry(ctx, node, operands):
    """`Blockwise.perform` in the module: the core Op's function called on each batch
    entry in turn (a while loop over the flattened batch), its run-time checks or-ed
    over the entries and raised after the loop."""
    batch_ndim = node.op.batch_ndim(node)
    fn, varying = _core_function(ctx, node)
    operands = [operands[i] for i in varying]
    dims = batch_dims(node, operands, batch_ndim)
    _check_batch_dims(ctx, operands, dims)
    n_out = len(node.outputs)
    checks = ctx.checks_of(fn)
    outputs = _output_buffers(ctx, node, fn, operands, dims)
    # Batch dims that may be 0 are at least 1 long, so that the body is valid IR.
    maybe_empty = [d for d, size in enumerate(dims) if not (isinstance(size, int) and size > 0)]
    operands = [at_least_one(x, [d for d in maybe_empty if static_shape(x.type)[d] != 1]) for x in operands]
    outputs = [at_least_one(b, maybe_empty) for b in outputs]
    count = dim_value(dim_product(dims))

    def cond(values):
        return compare(values[0], count, "LT")

    def body(values):
        i, buffers, flags = values[0], values[1 : 1 + n_out], values[1 + n_out :]
        index = _unravel(i, dims)
        results = ctx.emit_call(fn, [_entry(x, index) for x in operands])
        buffers = [write_entry(b, r, index) for b, r in zip(buffers, results[:n_out], strict=True)]
        flags = [hlo.or_(a, b) for a, b in zip(flags, results[n_out:], strict=True)]
        return [hlo.add(i, dim_value(1)), *buffers, *flags]

    false = ir_constant(np.False_)
    results = while_loop([dim_value(0), *outputs, *[false] * len(checks)], cond, body)
    for flag, check in zip(results[1 + n_out :], checks, strict=True):
        ctx.runtime_check(flag, check.error, check.message)
    outputs = []
    for buffer, out in zip(results[1 : 1 + n_out], node.outputs, strict=True):
        for d in maybe_empty:
            buffer = slice_axis(buffer, d, 0, dims[d])
        outputs.append(with_static_dims(buffer, out.type.shape))
    return tuple(outputs)


def _check_batch_dims(ctx, operands, dims) -> None:
    """perform's ValueError where an input's batch dim (not statically 1) differs from
    the broadcast one: reading its entries would otherwise clamp into range."""
    flags = []
    for d, size in enumerate(dims):
        sized = _sized(operands, d)
        for x in sized:
            if isinstance(size, int) and static_shape(x.type)[d] is not None:
                continue  # PyTensor compared static dims when it built the node
            if not isinstance(size, int) and x is sized[0]:
                continue  # `batch_dims` read the size off this input
            flags.append(compare(dim_value(dim_size(x, d)), dim_value(size), "NE"))
    if flags:
        ctx.runtime_check(functools.reduce(hlo.or_, flags), ValueError, "the inputs' batch dims do not match")


def _output_buffers(ctx, node, fn, operands, dims) -> list[ir.Value]:
    """Zeros of (*batch, *core) per output."""
    batch_ndim = len(dims)

    def zero_entries():
        return [full(0, shape_of(x)[batch_ndim:], value_dtype(x)) for x in operands]

    cores = ctx.result_dims(fn, range(len(node.outputs)), zero_entries)
    return [full(0, [*dims, *core], out.type.dtype) for core, out in zip(cores, node.outputs, strict=True)]


def _unravel(i: ir.Value, dims) -> list[ir.Value]:
    """The batch position of flat entry i (C order)."""
    index = []
    for d in reversed(dims[1:]):
        size = dim_value(d)
        index.append(remainder(i, size))
        i = divide(i, size)
    return [i, *reversed(index)]


def _entry(x: ir.Value, index) -> ir.Value:
    """x's core value at batch position `index` (a batch dim of 1 broadcasts)."""
    shape = static_shape(x.type)
    return read_entry(x, [dim_value(0) if shape[d] == 1 else p for d, p in enumerate(index)])
