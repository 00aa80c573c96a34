"""IfElse as one `stablehlo.if`: only the taken branch runs.

The graph walker leaves the nodes that only one branch needs to that branch
(`lazy_inputs`); each branch becomes a private function called inside its region,
so a branch's run-time checks (an index out of range, an Assert) fire only when the
branch is taken. Their flags leave the `if` as extra results, false from the other
branch, and are raised as checks of the function holding the IfElse.
"""

from __future__ import annotations

from jax.extend.mlir import ir
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.ifelse import IfElse

from lowering.builders import cast_shape, convert, function_type, ir_constant, reshape
from lowering.errors import UnsupportedParameterError
from lowering.registry import register_lowering
from lowering.types import to_ir_type


def _branches(node) -> dict[int, str]:
    n = node.op.n_outs
    return {i: "then" if i <= n else "else" for i in range(1, len(node.inputs))}


@register_lowering(IfElse, lazy_inputs=_branches)
def lower_ifelse(ctx, node, cond, *_):
    n = node.op.n_outs
    out_types = [to_ir_type(o.type) for o in node.outputs]
    branches = [
        ctx.lower_region_function(outputs, f"ifelse_{name}")
        for name, outputs in (("then", node.inputs[1 : n + 1]), ("else", node.inputs[n + 1 :]))
    ]
    _refuse_shapes_that_depend_on_the_condition(node, [fn for fn, _ in branches])
    checks = [ctx.checks_of(fn) for fn, _ in branches]
    false = ir_constant(False)
    if_op = hlo.IfOp(out_types + [false.type] * sum(map(len, checks)), convert(reshape(cond, ()), "bool"))
    for side, region, (fn, operands) in zip((0, 1), (if_op.true_branch, if_op.false_branch), branches):
        with ir.InsertionPoint(region.blocks.append()):
            results = ctx.emit_call(fn, operands)
            flags = results[n:]
            # Each side returns every flag: its own, and false for the other side's.
            flags = flags + [false] * len(checks[1]) if side == 0 else [false] * len(checks[0]) + flags
            hlo.return_([cast_shape(v, t) for v, t in zip(results[:n], out_types)] + flags)
    results = list(if_op.results)
    for flag, check in zip(results[n:], checks[0] + checks[1]):
        ctx.runtime_check(flag, check.error, check.message)
    return tuple(results[:n])


def _refuse_shapes_that_depend_on_the_condition(node, functions) -> None:
    """XLA needs one static result shape per signature; PyTensor allows branches of
    different static shapes, whose result shape then depends on the condition's value."""
    then_types, else_types = (function_type(fn).results for fn in functions)
    for i, (a, b) in enumerate(zip(then_types, else_types)):
        a, b = ir.RankedTensorType(a), ir.RankedTensorType(b)
        if a.has_static_shape and b.has_static_shape and a.shape != b.shape:
            raise UnsupportedParameterError(
                node, f"branches of different shapes for output {i} ({tuple(a.shape)} and {tuple(b.shape)})",
                "the result's shape would depend on the condition's value",
            )
