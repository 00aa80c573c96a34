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

import jax
import numpy as np
from jax.extend.mlir import ir
from pytensor.link.jax.ops import JAXOp

from lowering.builders import convert, dim_size, function_type, reshape, symbol_name
from lowering.errors import UnsupportedParameterError
from lowering.registry import register_lowering
from lowering.types import dtype_of, static_shape


class _Signature:
    """The function's argument types. A dim that our IR knows (`dim_size` gives an
    int) is a number; the others are JAX symbolic dims, one symbol per distinct size:
    two operand dims traced to the same i64 value share it. So a VJP's cotangent
    whose length was read off the forward call's result gets the symbol of the input
    that length came from, as `jax.vjp` requires."""

    def __init__(self, node, operands):
        sizes = {}  # the i64 value of each symbolic dim, by symbol name
        keys = {}  # symbol name by that value
        dims = []
        for x in operands:
            shape = []
            for axis, known in enumerate(static_shape(x.type)):
                size = known if known is not None else dim_size(x, axis)
                if isinstance(size, ir.Value):
                    name = keys.setdefault(size, f"d{len(keys)}")
                    sizes[name] = size
                    size = name
                shape.append(size)
            dims.append(shape)
        symbols = dict(zip(sizes, jax.export.symbolic_shape(", ".join(sizes)))) if sizes else {}
        self.sizes = sizes
        self.avals = [
            jax.ShapeDtypeStruct(tuple(symbols.get(d, d) for d in shape), np.dtype(v.type.dtype))
            for v, shape in zip(node.inputs, dims)
        ]

    @property
    def symbolic(self) -> bool:
        return bool(self.sizes)

    def tie(self, result: ir.Value, aval) -> ir.Value:
        """`result` reshaped (a no-op) to say which of its dims are argument sizes, where
        JAX's result type is a bare symbol: shapes read off it lead back to the operands."""
        dims = [d if isinstance(d, int) else self.sizes.get(str(d)) for d in aval.shape]
        if any(d is None for d in dims) or None not in static_shape(result.type):
            return result  # a size JAX computed (d0 + 1), or nothing left to say
        return reshape(result, dims)


def _jax_module(node, signature: _Signature):
    """JAX's module for the node's function (every argument kept, used or not, so that
    the parameters are the node's inputs), the pytree of its results and their types."""
    fn = jax.jit(node.op.jax_func, keep_unused=True)
    if signature.symbolic:
        exported = jax.export.export(fn, platforms=["cpu"])(*signature.avals)
        return exported.mlir_module(), exported.out_tree, exported.out_avals
    lowered = fn.lower(*signature.avals)
    return lowered.as_text(), lowered.out_tree, None


def _check_results(node, out_tree) -> None:
    """What `JAXOp.perform` requires of the function's results: a tuple of one array
    per output."""
    results = jax.tree_util.tree_unflatten(out_tree, range(out_tree.num_leaves))
    if not isinstance(results, tuple):
        raise TypeError("JAX function must return a tuple of outputs.")
    if len(results) != len(node.outputs):
        raise ValueError(f"JAX function returned {len(results)} outputs, but {len(node.outputs)} were expected.")
    if out_tree.num_leaves != len(node.outputs):
        raise ValueError("JAX function must return one array per output, not nested containers.")


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
    signature = _Signature(node, operands)
    try:
        text, out_tree, out_avals = _jax_module(node, signature)
    except Exception as exc:  # the user's function failed to trace at these types
        raise UnsupportedParameterError(
            node, "the JAX function", f"JAX could not lower it: {type(exc).__name__}: {exc}"
        ) from None
    _check_results(node, out_tree)
    fn = _splice(ctx, text)
    arg_types = function_type(fn).inputs
    operands = [convert(x, dtype_of(t)) for x, t in zip(operands, arg_types, strict=True)]
    results = ctx.call_function(fn, operands, len(node.outputs))
    if out_avals is not None:
        results = [signature.tie(r, aval) for r, aval in zip(results, out_avals)]
    # Without x64 JAX returns float32 where the node declares float64 (perform's values).
    return tuple(convert(r, out.type.dtype) for r, out in zip(results, node.outputs))
