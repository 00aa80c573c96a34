"""JAXOp (`pytensor.wrap_jax`): a user's JAX function inside a PyTensor graph.

The one place where JAX's own lowering is right: the function is lowered by JAX under
the same `jax_enable_x64` setting that `JAXOp.perform` runs it with (without it, JAX
computes float64 inputs in float32, and `wrap_jax` declares float32 outputs), its module
is parsed into ours, every function renamed to a fresh private symbol, and the node
becomes a call (operands converted to the types JAX chose). PyTensor and
JAX code then compile into one XLA executable. Unknown dims are exported with JAX's
symbolic shapes; its shape assertions are checked when the call is specialized.
"""

from __future__ import annotations

import itertools

import jax
import numpy as np
from jax.extend.mlir import ir
from pytensor.link.jax.ops import JAXOp

from lowering.builders import convert, function_type, symbol_name
from lowering.errors import UnsupportedParameterError
from lowering.registry import register_lowering
from lowering.types import dtype_of

def _avals(node):
    names = iter(f"d{i}" for i in itertools.count())
    dims = [list(v.type.shape) for v in node.inputs]
    unknown = [next(names) for shape in dims for d in shape if d is None]
    symbols = iter(jax.export.symbolic_shape(", ".join(unknown))) if unknown else iter(())
    avals = []
    for v, shape in zip(node.inputs, dims):
        shape = tuple(next(symbols) if d is None else d for d in shape)
        avals.append(jax.ShapeDtypeStruct(shape, np.dtype(v.type.dtype)))
    return avals, bool(unknown)


def _jax_module_text(node) -> str:
    avals, symbolic = _avals(node)
    fn = jax.jit(node.op.jax_function if hasattr(node.op, "jax_function") else node.op.jitted_func)
    if symbolic:
        return jax.export.export(fn, platforms=["cpu"])(*avals).mlir_module()
    return fn.lower(*avals).as_text()


def _splice(ctx, text: str):
    """Parse JAX's module into ours with fresh private names; return the new @main."""
    jax_module = ir.Module.parse(text)
    table = ir.SymbolTable(jax_module.operation)
    renames = {}
    for op in list(jax_module.body.operations):
        if op.operation.name != "func.func":
            continue
        old = symbol_name(op)
        new = ctx.unique_symbol(f"jax_{old.lstrip('_')}")
        renames[old] = new
    for old, new in renames.items():
        table.replace_all_symbol_uses(old, new, jax_module.operation)
        fn = table[old]
        table.set_symbol_name(fn, new)
        fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
        for attr in ("arg_attrs", "res_attrs"):  # jax.result_info, shardings: meaningless here
            if attr in fn.attributes:
                del fn.attributes[attr]
    main = None
    for op in list(jax_module.body.operations):
        if op.operation.name == "func.func":
            ctx.module.body.append(op)
            if symbol_name(op) == renames["main"]:
                main = op
    return main


@register_lowering(JAXOp)
def lower_jax_op(ctx, node, *operands):
    try:
        text = _jax_module_text(node)
    except Exception as exc:  # the user's function failed to trace at these types
        raise UnsupportedParameterError(
            node, "the JAX function", f"JAX could not lower it: {type(exc).__name__}: {exc}"
        ) from None
    fn = _splice(ctx, text)
    arg_types = function_type(fn).inputs
    operands = [convert(x, dtype_of(t)) for x, t in zip(operands, arg_types, strict=True)]
    results = ctx.call_function(fn, operands, len(node.outputs))
    # Without x64 JAX returns float32 where the node declares float64 (perform's values).
    return tuple(convert(r, out.type.dtype) for r, out in zip(results, node.outputs))
