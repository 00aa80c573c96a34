"""Named pipelines, our Python passes, and a runner with per-pass IR and timing.

A pipeline is MLIR's textual form, `builtin.module(a,b,func.func(c))`. Its
top-level elements are either MLIR passes or the Python passes registered in
`PYTHON_PASSES`; the runner groups consecutive MLIR passes into one PassManager
run unless the caller asked for IR or timing after each pass.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from jax.extend.mlir import ir, passmanager
from jax.extend.mlir.dialects import stablehlo as hlo

from lowering._jax_internal import register_passes
from lowering.builders import (
    COMPARED,
    ELEMENTWISE_OPS,
    EXACT_OPS,
    compared_sum,
    constant_array,
    dot_general,
    ir_constant,
    polynomial_atan,
    reshape,
    static_slice,
    symbol_name,
    transpose,
)
from lowering.errors import PassPipelineError
from lowering.regions import computed_once
from lowering.types import dtype_of

# The default pipeline, run by `lower()` on the shape-polymorphic module.
DEFAULT_PIPELINE = (
    "builtin.module("
    # Our own: func.call of private functions (OpFromGraph) inlined into the caller;
    # MLIR's `inline` has no func inliner interface registered in jaxlib's context.
    "inline-private-calls,"
    # Private functions nobody calls any more: the inlined ones go before the folders
    # below, which would fold their bodies unrefined (`stablehlo-refine-shapes` leaves
    # a function no call reaches as it is).
    "symbol-dce,"
    # Shapes computed from constants become static first: MHLO's folder turns a
    # dynamically typed slice of a constant into an invalid `tensor<?x..>` constant.
    "fold-shape-arithmetic,"
    "stablehlo-refine-shapes,"
    # One order for elementwise ops and reshapes, so that `cse` sees equal expressions.
    "elementwise-before-layout,"
    # (MHLO's scatter folder crashes on a scatter of nothing: see guard_empty_scatters)
    "guard-empty-scatters,"
    # StableHLO's own `canonicalize` folds nothing in this jaxlib; MHLO's does:
    # constant folding, x+0, x*1, identity transposes/reshapes, splat broadcasts.
    "stablehlo-legalize-to-hlo,"
    "canonicalize,"
    "cse,"
    "hlo-legalize-to-stablehlo,"
    # A sum two comparisons read is computed once (XLA would recompute it in each kernel),
    # after `cse` has made the graph's copies of it one.
    "compute-compared-once"
    ")"
)


# CHLO (erf, lgamma, sinh, ...) is expanded into plain StableHLO only once shapes are
# static: on `?` shapes the expansion emits `shape` dialect ops that shape refinement
# cannot see through. Then atan2(y, 1), chlo.atan's expansion among others, becomes our
# own atan (`atan2_of_one`).
LEGALIZE_CHLO = (
    "builtin.module(check-shape-assertions,fold-constant-if,func.func(chlo-legalize-to-stablehlo),atan2-of-one)"
)

# A module whose CHLO was expanded on `?` shapes (dims a program measures at run time):
# its `shape` ops as StableHLO, which refinement can fold once the dims are bound.
SHAPE_TO_STABLEHLO = "builtin.module(func.func(shape-legalize-to-stablehlo),canonicalize)"

# A portable artifact keeps `?` shapes: CHLO is expanded there anyway, the `shape` ops of
# the expansion are rewritten into StableHLO, and canonicalize drops the casts left between.
PORTABLE_CHLO = (
    "builtin.module(func.func(chlo-legalize-to-stablehlo),func.func(shape-legalize-to-stablehlo),"
    "canonicalize)"
)


def specialize_pipeline(arg_types: list[str]) -> str:
    """Refine @main's argument types, propagate shapes, and make dynamic ops static."""
    types = ",".join(arg_types)
    return (
        "builtin.module("
        f"stablehlo-refine-arguments{{types={types}}},"
        "stablehlo-refine-shapes,"
        "func.func(stablehlo-canonicalize-dynamism)"
        ")"
    )


# Folds what `stablehlo-refine-shapes` leaves (negate, abs, ... of constants) so shapes
# computed from bound scalar values become constants, then refines again.
FOLD_AND_REFINE = (
    "builtin.module("
    "fold-constant-reduce,fold-agreeing-if,fold-shape-arithmetic,"
    # (static before MHLO's folder sees them: see DEFAULT_PIPELINE)
    "stablehlo-refine-shapes,func.func(stablehlo-canonicalize-dynamism),"
    "guard-empty-scatters,"
    "stablehlo-legalize-to-hlo,canonicalize,hlo-legalize-to-stablehlo,"
    "static-elementwise-results,"
    "stablehlo-refine-shapes,func.func(stablehlo-canonicalize-dynamism)"
    ")"
)


# --- Python passes ----------------------------------------------------------------


def inline_private_calls(module_op: ir.Operation) -> None:
    """Inline every `func.call` whose callee is a private function of this module."""
    body = module_op.regions[0].blocks[0]
    funcs = {}
    for op in body.operations:
        if op.operation.name == "func.func":
            funcs[symbol_name(op)] = op
    if not any(_visibility(fn) == "private" for fn in funcs.values()):
        return  # nothing to inline: skip walking every op
    changed = True
    while changed:  # calls nested in inlined bodies are inlined on the next sweep
        changed = False
        for fn in list(funcs.values()):
            for call in _calls_in(fn):
                callee = funcs.get(ir.FlatSymbolRefAttr(call.attributes["callee"]).value)
                if callee is None or _visibility(callee) != "private":
                    continue
                _inline_call(call, callee)
                changed = True


def _visibility(fn) -> str:
    attr = fn.attributes["sym_visibility"] if "sym_visibility" in fn.attributes else None
    return ir.StringAttr(attr).value if attr is not None else "public"


def _calls_in(fn) -> list:
    calls = []

    def visit(op):
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    if inner.operation.name == "func.call":
                        calls.append(inner.operation)
                    visit(inner.operation)

    visit(fn.operation)
    return calls


def _inline_call(call: ir.Operation, callee) -> None:
    clone = callee.operation.clone()
    block = clone.regions[0].blocks[0]
    for arg, operand in zip(block.arguments, call.operands):
        arg.replace_all_uses_with(operand)
    ops = list(block.operations)
    ret = ops[-1]
    for op in ops[:-1]:
        op.operation.move_before(call)
    for result, value in zip(call.results, ret.operands):
        result.replace_all_uses_with(value)
    call.erase()
    clone.erase()


# Reductions whose body is one of these ops, evaluated with numpy when their operands are
# constants (neither StableHLO's nor MHLO's folders fold `reduce`). Shapes computed from
# sums of constants (pad widths, after specialization) then become static.
_REDUCERS = {
    "stablehlo.add": np.add, "stablehlo.multiply": np.multiply,
    "stablehlo.maximum": np.maximum, "stablehlo.minimum": np.minimum,
    "stablehlo.and": np.bitwise_and, "stablehlo.or": np.bitwise_or,
}


def fold_constant_reduce(module_op: ir.Operation) -> None:
    """Replace `stablehlo.reduce` of integer/float constants by its value."""
    for op in ops_named(module_op, "stablehlo.reduce"):
        ufunc = _REDUCERS.get(_reducer(op))
        if ufunc is None:
            continue
        values = [constant_array(v) for v in op.operands]
        if any(v is None for v in values):
            continue
        data, init = values
        axes = tuple(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
        result = ufunc.reduce(data, axis=axes, initial=init.item()).astype(data.dtype)
        with ir.InsertionPoint(op), op.location:
            const = ir_constant(result)
        op.results[0].replace_all_uses_with(const)
        op.erase()


def _reducer(reduce_op) -> str | None:
    """The op a one-result `stablehlo.reduce` combines with, where its body is
    `return f(a, b)` of its two block arguments; else None."""
    block = reduce_op.regions[0].blocks[0]
    body = list(block.operations)
    if len(reduce_op.results) != 1 or len(body) != 2 or list(body[1].operands) != list(body[0].results):
        return None
    if set(body[0].operands) != set(block.arguments):
        return None
    return body[0].operation.name


def fold_agreeing_if(module_op: ir.Operation) -> None:
    """Replace a `stablehlo.if` result by the value every branch returns for it: the
    same value from outside the `if`, or equal constants. A shape computed by an IfElse
    of shapes (PyTensor's shape inference builds those) becomes static this way when
    both branches agree, whatever the condition."""
    for op in ops_named(module_op, "stablehlo.if", "stablehlo.case"):
        returns = [list(region.blocks[0].operations)[-1].operands for region in op.regions]
        for i, result in enumerate(op.results):
            values = [r[i] for r in returns]
            if all(v == values[0] for v in values) and not _defined_inside(values[0], op):
                result.replace_all_uses_with(values[0])
                continue
            arrays = [constant_array(v) for v in values]
            if arrays[0] is not None and all(a is not None and np.array_equal(a, arrays[0]) for a in arrays):
                with ir.InsertionPoint(op), op.location:
                    result.replace_all_uses_with(ir_constant(arrays[0]))


def fold_constant_if(module_op: ir.Operation) -> None:
    """Replace each `stablehlo.if` whose condition is a constant by the ops of the branch
    it takes. A rule that chooses between two ways by a size known only at run time
    (`random._compacting`) emits both; once the module is specialized to a size, the
    condition is a constant (refine-shapes folds it), and neither MHLO's canonicalize
    nor anything before XLA drops the other way, which our small-loop check and XLA's
    conversion would still count and read.

    Innermost first (a post-order walk): an `if` is folded before any `if` around it,
    so erasing an outer one's other branch erases only ifs already done."""
    found = []

    def visit(op):
        if op.name == "stablehlo.if" and constant_array(op.operands[0], "b") is not None:
            found.append(op)
        return ir.WalkResult.ADVANCE

    module_op.walk(visit, ir.WalkOrder.POST_ORDER)
    for op in found:
        taken = op.regions[0 if constant_array(op.operands[0], "b") else 1].blocks[0]
        *body, end = list(taken.operations)
        for inner in body:
            inner.operation.move_before(op)
        for result, value in zip(op.results, end.operands, strict=True):
            result.replace_all_uses_with(value)
        op.erase()


# What `stablehlo-refine-shapes` does not evaluate (it does integer add, subtract,
# multiply, divide, remainder, min, max, clamp, sign, compare, select): in integers and
# float32/float64, numpy rounds each as XLA does (IEEE arithmetic, one rounding).
_UNFOLDED = {
    "stablehlo.negate": np.negative, "stablehlo.abs": np.abs,
    "stablehlo.floor": np.floor, "stablehlo.ceil": np.ceil, "stablehlo.sqrt": np.sqrt,
    "stablehlo.add": np.add, "stablehlo.subtract": np.subtract,
    "stablehlo.multiply": np.multiply, "stablehlo.divide": np.true_divide,
}
_FOLD_MAX_ELEMENTS = 64  # shape arithmetic, not data


def fold_shape_arithmetic(module_op: ir.Operation) -> None:
    """Evaluate small integer and float ops of constants that `stablehlo-refine-shapes`
    leaves (negate, abs, float math, conversions): sizes computed with them (`x[-n:]`,
    arange's length) become constants, so refinement makes the ops they size static
    before MHLO's folder runs. MHLO's folder, reaching a still `?`-typed slice of a
    constant in the same run that folds its bounds, makes an invalid `tensor<?x..>`
    constant of it.

    A slice of a shape vector built by `concatenate` is read from the piece it covers:
    `concatenate(201, dim(x, 1))[0:1]` is 201 whatever x is, which refinement, folding
    only ops of constants, does not see (MHLO's folder does)."""
    for op in ops_named(module_op, "stablehlo.slice"):
        _slice_of_concatenate(op)
    for op in ops_named(module_op, *_UNFOLDED, "stablehlo.convert"):
        result = op.results[0]
        if not ir.RankedTensorType(result.type).has_static_shape:
            continue
        dtype = np.dtype(dtype_of(result.type))
        if dtype.kind not in "iu" and dtype not in (np.float32, np.float64):
            continue
        if dtype.kind in "iu" and op.name in ("stablehlo.divide", "stablehlo.sqrt", "stablehlo.floor",
                                              "stablehlo.ceil"):
            continue  # (refine-shapes divides integers, truncating; the rest take floats)
        values = [constant_array(v) for v in op.operands]  # (the costly part: last)
        if any(v is None or v.size > _FOLD_MAX_ELEMENTS for v in values):
            continue
        if op.name == "stablehlo.convert":
            value = _converted(values[0], dtype)
        else:
            with np.errstate(all="ignore"):
                value = np.asarray(_UNFOLDED[op.name](*values)).astype(dtype)
        if value is None:
            continue
        with ir.InsertionPoint(op), op.location:
            result.replace_all_uses_with(ir_constant(value))
        op.erase()


def _slice_of_concatenate(op) -> None:
    """Replace a 1-D `slice` that lies within one operand of the `concatenate` it reads
    by that operand, or a slice of it."""
    source = op.operands[0].owner
    if (not isinstance(source, (ir.Operation, ir.OpView)) or source.operation.name != "stablehlo.concatenate"
            or ir.RankedTensorType(op.operands[0].type).rank != 1):
        return
    (start,), (limit,), (stride,) = (ir.DenseI64ArrayAttr(op.attributes[k]) for k in
                                     ("start_indices", "limit_indices", "strides"))
    if stride != 1:
        return
    offset = 0
    for piece in source.operation.operands:
        size = ir.RankedTensorType(piece.type).shape[0]
        if ir.ShapedType.is_dynamic_size(size):
            return  # (where the later pieces start is not known)
        if offset <= start and limit <= offset + size:
            replacement = piece
            if (start - offset, limit - offset) != (0, size):
                with ir.InsertionPoint(op), op.location:
                    replacement = static_slice(piece, [start - offset], [limit - offset])
            op.results[0].replace_all_uses_with(replacement)
            op.erase()
            return
        offset += size


def _converted(value: np.ndarray, dtype: np.dtype):
    """`stablehlo.convert` of a constant, where numpy's conversion is XLA's; None for a
    float that does not fit the integer type (XLA saturates; NaN, too, is left to it)."""
    if value.dtype.kind == "f" and dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not (np.all(value > float(info.min) - 1) and np.all(value < float(info.max) + 1)):
            return None
        value = np.trunc(value)
    with np.errstate(all="ignore"):
        return value.astype(dtype)


_STABLEHLO_ELEMENTWISE = tuple(name for name in ELEMENTWISE_OPS if name.startswith("stablehlo."))


def static_elementwise_results(module_op: ir.Operation) -> None:
    """Give an elementwise op whose operands all have static shapes that shape (its users
    see the old `?` type through a `convert`). `stablehlo-refine-shapes` folds such an op
    of constants into a constant of its own `?` type, which is invalid: MHLO's folder
    leaves `add(constant<2xi64>, constant<2xi64>) -> tensor<?xi64>` behind, as for
    `1 + n + arange(k)` with n and k bound to values."""
    for op in ops_named(module_op, *_STABLEHLO_ELEMENTWISE):
        if len(op.results) != 1 or not op.operands:
            continue
        shapes = {tuple(ir.RankedTensorType(v.type).shape) if ir.RankedTensorType(v.type).has_static_shape else None
                  for v in op.operands}
        result = op.results[0]
        old = ir.RankedTensorType(result.type)
        if len(shapes) != 1 or None in shapes or old.has_static_shape:
            continue
        result.set_type(ir.RankedTensorType.get(list(shapes.pop()), old.element_type))
        with ir.InsertionPoint.after(op), op.location:
            back = hlo.convert(old, result)
        result.replace_all_uses_except(back, back.owner.operation)


def guard_empty_scatters(module_op: ir.Operation) -> None:
    """Pass the indices of a scatter of no updates (an update tensor of static shape with
    no elements) through an `optimization_barrier`. MHLO's scatter folder reads past an
    empty index constant and crashes the process (jaxlib 0.10.2). One is built where a
    scatter's indices come from the written-out scan (`regions.prefix_scan`) of a vector
    empty at a call, which folds to a constant: `pt.zeros(i.sum() + 1)[pt.cumsum(i)]`
    incremented. Behind the barrier the indices are no constant, so nothing folds the
    scatter; XLA drops the barrier, and a scatter of nothing costs nothing. (Replacing the
    scatter by its operand instead lets MHLO fold that operand into users of a `?` type,
    into a `?`-typed constant it then rejects.) Runs where shapes are static, before
    MHLO's `canonicalize`."""
    for op in ops_named(module_op, "stablehlo.scatter"):
        n = len(op.results)
        indices, updates = op.operands[n], list(op.operands)[n + 1:]
        if not all(_static_and_empty(u.type) for u in updates):
            continue
        owner = getattr(indices, "owner", None)
        if getattr(owner, "name", None) == "stablehlo.optimization_barrier":
            continue
        with ir.InsertionPoint(op), op.location:
            guarded = hlo.OptimizationBarrierOp([indices]).results[0]
        op.operands[n] = guarded


def atan2_of_one(module_op: ir.Operation) -> None:
    """Replace atan2(y, 1) (a constant or broadcast constant 1: chlo.atan's expansion, or
    the graph's own) with `polynomial_atan(y)`. XLA:CPU (jaxlib 0.10.2) rewrites that
    atan2 into a vectorized atan which, with 512-bit vectors, gave wrong numbers (and
    crashed the process) on vectors of 50 or more elements, at most sizes (see
    `polynomial_atan`). Runs after `chlo-legalize-to-stablehlo`."""
    for op in ops_named(module_op, "stablehlo.atan2"):
        y, x = op.operands
        if not _splat_one(x):
            continue
        with ir.InsertionPoint(op), op.location:
            atan = polynomial_atan(y)
        op.results[0].replace_all_uses_with(atan)
        op.erase()


def compute_compared_once(module_op: ir.Operation) -> None:
    """Compute each sum or difference that a graph's comparison (`mark_compared`) and
    another comparison read (`_compared_twice`; through broadcasts, reshapes, transposes,
    converts and negations, which keep its numbers) once, in the body of a loop that runs
    once, and give every reader that result. XLA:CPU computes a cheap elementwise value
    again inside each fused kernel that reads it, contracting multiply-adds into FMAs in
    some kernels and not in others, and its algebraic simplifier rewrites some products
    (x / exp(l) as x * exp(-l), whose square it takes as x**2 * exp(-2 l)): one variable
    then held two numbers in one call, and two comparisons of it two answers. A loop's
    results are written to memory, which every reader then loads.

    PyMC's GP marginal likelihood clips its squared distances at 0. Their diagonal, 0 in
    numpy, came out as +-1e-15, the clip's gradient mask disagreed between the kernels
    that recomputed it, and the gradient was far off: d logp / d log(ls) -4,025 against
    numpy's 12.749 (Matern52), d logp / d log(ell) -113.2 against 1.915 (eta**2 *
    ExpQuad, under STABLEHLO_NO_FMA too; tests/test_numerics.py). Float tensors only: a
    0-d sum is a few instructions, and its loop would cost more than it computes."""
    for compare in ops_with_attribute(module_op, COMPARED):
        del compare.attributes[COMPARED]
        for k in range(len(compare.operands)):
            op = compared_sum(compare.operands[k])  # (None for a sum already taken)
            if op is None or not _compared_twice(op):
                continue
            with ir.InsertionPoint.after(op), op.location:
                once = computed_once(op, init=op.operands[0])
            op.results[0].replace_all_uses_with(once)
            op.erase()


def _compared_twice(op) -> bool:
    """Whether two comparisons read `op`'s sum (through broadcasts, reshapes, transposes,
    converts, negations): where one does, XLA computes the sum in the kernels that read
    its mask, which may give it two numbers but one answer per kernel. A sum compared
    once costs a loop's reads and writes for nothing: a ReLU network's logp and gradient
    (1,000 x 50 hidden units, each compared with 0 once) took 60.4 µs a call fused and
    78.6 written out; 10,000 points, 476 and 870."""
    comparisons, values = 0, [op.results[0]]
    while values:
        for use in values.pop().uses:
            reader = use.owner
            reader = reader.operation if isinstance(reader, ir.OpView) else reader
            if reader.name == "stablehlo.compare":
                comparisons += 1
            elif reader.name in EXACT_OPS:
                values.append(reader.results[0])
    return comparisons > 1


def ops_with_attribute(module_op: ir.Operation, name: str) -> list:
    """Every op that carries the attribute `name`, nested ones included."""
    found = []

    def visit(op):
        if name in op.attributes:
            found.append(op)
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    return found


# Ops that only lay a tensor's elements out again: an elementwise op commutes with them.
_LAYOUT_OPS = ("stablehlo.reshape", "stablehlo.broadcast_in_dim")
# Elementwise by name (its results have its operands' shape) but not element by element.
_NOT_SUNK = frozenset({"stablehlo.sort"})


def elementwise_before_layout(module_op: ir.Operation) -> None:
    """Compute an elementwise op before the reshapes or broadcasts that feed it:
    f(reshape(x), reshape(y)) becomes reshape(f(x, y)) where x and y have one shape and
    the reshapes (or broadcasts, with the same dims) agree; a splat constant operand is
    made again in x's shape. The numbers are the same element by element; a broadcast
    value is computed once where it was computed for every copy.

    PyTensor's rewrites leave one subexpression in both orders where a value has
    several readers (`local_dimshuffle_lift` lifts a DimShuffle only over an Elemwise no
    one else reads): PyMC's GP marginal likelihood read exp(expand_dims(eta)) in its
    logp and expand_dims(exp(eta)) in its gradient, so the covariance matrix and its
    Cholesky factor were computed twice (N = 100: 207.6 against 176.8 µs a call). In one
    order `cse` sees one expression."""
    for op in ops_named(module_op, *_STABLEHLO_ELEMENTWISE):
        if op.name not in _NOT_SUNK:
            _before_layout(op)


def _before_layout(op) -> None:
    if len(op.results) != 1 or op.regions or not op.operands:
        return
    result = ir.RankedTensorType(op.results[0].type)
    if not result.has_static_shape or dtype_of(result) == "bool":
        # (a mask keeps its shape: comparisons of tensor<1xf64>s made 0-d changed how XLA
        # ran the `if`s of lgamma's and digamma's reflections on them, and the Student-t
        # regression took 30.8 µs a call against 22.0)
        return
    layout, sources = None, []
    for value in op.operands:
        owner = value.owner
        owner = owner.operation if isinstance(owner, (ir.Operation, ir.OpView)) else None
        if owner is not None and owner.name in _LAYOUT_OPS:
            source = ir.RankedTensorType(owner.operands[0].type)
            if not source.has_static_shape:
                return
            dims = owner.attributes["broadcast_dimensions"] if "broadcast_dimensions" in owner.attributes else None
            key = (owner.name, tuple(source.shape), str(dims))
            if layout not in (None, key):
                return
            layout = (key, owner)
            sources.append(owner.operands[0])
        elif _splat_constant(value, result.shape) is not None:
            sources.append(None)
        else:
            return
    if layout is None:
        return
    key, shape_op = layout
    shape = list(key[1])
    with ir.InsertionPoint(op), op.location:
        operands = [
            hlo.constant(ir.DenseElementsAttr.get_splat(
                ir.RankedTensorType.get(shape, ir.RankedTensorType(v.type).element_type),
                _splat_constant(v, result.shape),
            )) if s is None else s
            for v, s in zip(op.operands, sources)
        ]
        attributes = {name: op.attributes[name] for name in op.attributes}
        inner = ir.Operation.create(
            op.name, results=[ir.RankedTensorType.get(shape, result.element_type)],
            operands=operands, attributes=attributes,
        ).results[0]
        if shape_op.name == "stablehlo.reshape":
            outer = hlo.reshape(result, inner)
        else:
            outer = hlo.broadcast_in_dim(result, inner, shape_op.attributes["broadcast_dimensions"])
    op.results[0].replace_all_uses_with(outer)
    op.erase()


def _splat_constant(value: ir.Value, shape):
    """The splat element attribute of a constant `value` of `shape`, else None."""
    owner = value.owner
    if not isinstance(owner, (ir.Operation, ir.OpView)) or owner.operation.name != "stablehlo.constant":
        return None
    if list(ir.RankedTensorType(value.type).shape) != list(shape):
        return None
    try:
        attr = ir.DenseElementsAttr(owner.operation.attributes["value"])
    except TypeError:  # complex elements: the bindings cannot cast their attribute
        return None
    return attr.get_splat_value() if attr.is_splat else None


def _splat_one(value: ir.Value) -> bool:
    """Whether `value` is a float constant of ones, or a broadcast of one."""
    owner = value.owner
    if not isinstance(owner, (ir.Operation, ir.OpView)):
        return False  # a block argument
    owner = owner.operation
    if owner.name == "stablehlo.broadcast_in_dim":
        return _splat_one(owner.operands[0])
    if owner.name != "stablehlo.constant" or np.dtype(dtype_of(value.type)).kind != "f":
        return False
    attr = ir.DenseElementsAttr(owner.attributes["value"])
    return attr.is_splat and ir.FloatAttr(attr.get_splat_value()).value == 1.0


def _static_and_empty(t: ir.Type) -> bool:
    ranked = ir.RankedTensorType(t)
    return ranked.has_static_shape and 0 in ranked.shape


def _defined_inside(value: ir.Value, op) -> bool:
    """Whether `value` is defined in one of `op`'s regions (not visible after it)."""
    owner = value.owner
    block = owner if isinstance(owner, ir.Block) else owner.operation.block
    while True:
        parent = block.owner
        if parent is None:
            return False
        parent = parent.operation
        if parent == op.operation:
            return True
        if parent.name in ("func.func", "builtin.module"):
            return False
        block = parent.block


def ops_named(module_op: ir.Operation, *names: str) -> list:
    """Every op with one of these names, nested ones included (collected before any rewrite)."""
    found = []

    def visit(op):
        if op.name in names:
            found.append(op)
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    return found


def check_shape_assertions(module_op: ir.Operation) -> None:
    """Resolve JAX's `shape_assertion` custom calls (from spliced shape-polymorphic JAX
    modules) once shapes are static: drop those that hold, raise for those that fail."""
    for op in ops_named(module_op, "stablehlo.custom_call"):
        if _callee(op) != "shape_assertion":
            continue
        holds = _scalar_constant(op.operands[0])
        if holds is None:
            continue  # still symbolic: XLA will refuse the module, naming the custom call
        if not holds:
            values = [_scalar_constant(v) for v in op.operands[1:]]
            message = ir.StringAttr(op.attributes["error_message"]).value
            try:
                message = message.format(*[int(v) for v in values])
            except (TypeError, ValueError, IndexError):
                pass
            raise PassPipelineError(f"error: {message}")
        op.erase()


def _callee(op) -> str:
    return ir.StringAttr(op.attributes["call_target_name"]).value if "call_target_name" in op.attributes else ""


def _scalar_constant(value: ir.Value):
    """The (first) element of a constant of any real or bool dtype, as a Python scalar."""
    array = constant_array(value, kinds="biuf")
    return None if array is None else array.reshape(-1)[0].item()


def contract_broadcast_products(module_op: ir.Operation) -> None:
    """Rewrite a float sum over dims of a product of two broadcasts, where each summed dim
    belongs to both factors and some kept dim to only one (a sum of outer products, as
    MvNormal's gradient sums one per observation), into a `dot_general`. XLA runs the
    reduce through a general reduction kernel: the LKJ MvNormal model's logp+dlogp, which
    sums 500 3 x 3 outer products, went from 45.4 to 39.6 µs a call as a dot (such a sum
    alone, 500 10 x 10 ones: 41.1 to 25.6). A dot contracts multiply-adds into FMAs, so
    this is for executables compiled with `fp_contraction` only (static shapes: it runs
    on specialized modules)."""
    for op in ops_named(module_op, "stablehlo.reduce"):
        _contract_product(op)


def _contract_product(op) -> None:
    if _reducer(op) != "stablehlo.add" or _scalar_constant(op.operands[1]) != 0.0:
        return
    product = op.operands[0]
    if not (isinstance(product, ir.OpResult) and product.owner.name == "stablehlo.multiply"):
        return
    out = list(ir.RankedTensorType(product.type).shape)
    dtype = np.dtype(dtype_of(product.type))
    if dtype not in (np.float32, np.float64) or not ir.RankedTensorType(product.type).has_static_shape:
        return
    factors = [_broadcast_source(v, out) for v in product.owner.operands]
    if None in factors:
        return
    (x, x_dims), (y, y_dims) = factors
    summed = set(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
    kept = [d for d in range(len(out)) if d not in summed]
    if not all(d in x_dims and d in y_dims for d in summed):
        return
    batch = [d for d in kept if d in x_dims and d in y_dims]
    x_free = [d for d in x_dims if d not in summed and d not in batch]
    y_free = [d for d in y_dims if d not in summed and d not in batch]
    if not summed or not (x_free or y_free):
        return
    order = sorted(summed)
    with ir.InsertionPoint(op), op.location:
        x = reshape(x, [out[d] for d in x_dims])  # (the widened dims dropped)
        y = reshape(y, [out[d] for d in y_dims])
        dot = dot_general(
            x, y, ([x_dims.index(d) for d in order], [y_dims.index(d) for d in order]),
            ([x_dims.index(d) for d in batch], [y_dims.index(d) for d in batch]), dtype=dtype,
        )
        layout = batch + x_free + y_free
        result = transpose(dot, [layout.index(d) for d in kept])
    op.results[0].replace_all_uses_with(result)
    op.erase()
    dead = [product.owner]
    dead += [v.owner for v in dict.fromkeys(product.owner.operands)]
    for producer in dead:  # (each used by the one before it alone, if at all)
        if not any(list(r.uses) for r in producer.results):
            producer.erase()


def _broadcast_source(value: ir.Value, out: list[int]):
    """For a `broadcast_in_dim` to the static shape `out` that keeps its operand's dims in
    order: its operand, and the dims of `out` it has (those the broadcast does not widen
    from size 1). None for anything else."""
    if not (isinstance(value, ir.OpResult) and value.owner.name == "stablehlo.broadcast_in_dim"):
        return None
    source = value.owner.operands[0]
    mapping = list(ir.DenseI64ArrayAttr(value.owner.attributes["broadcast_dimensions"]))
    shape = list(ir.RankedTensorType(source.type).shape)
    if mapping != sorted(set(mapping)):
        return None
    return source, [d for d, size in zip(mapping, shape) if size == out[d]]


# A matrix product reads its left operand's rows this many times or more (the right
# operand's free size) before `transposed_lhs_in_memory` copies that operand: below it,
# contracting the operand where it lies was as fast or faster (X.T @ r with r of 1 to 32
# columns: 268-823 µs against 457-838 for 1000 x 1000 X, 2.2-7.3 ms against 15-18 for
# 10^5 x 50).
_TRANSPOSE_REUSE = 64


def transposed_lhs_in_memory(module_op: ir.Operation) -> None:
    """A matrix product whose left operand is contracted over a dim that is not its last
    (`A.T @ B`) gets that operand transposed in memory first, behind an
    `optimization_barrier` (XLA's transpose folding would fold a bare transpose back into
    the dot). XLA:CPU multiplies a transposed left operand at half speed: 1000 x 1000
    float64s, `A.T @ B` 17.1 ms against 8.5 for the copy and `A @ B` (the GP's gradient at N
    = 1,000 has one, `L.T @ X`; L comes out of LAPACK column-major, so its transpose is
    free). For executables on the CPU (static shapes: it runs on specialized modules)."""
    for op in ops_named(module_op, "stablehlo.dot_general"):
        _lhs_in_memory_order(op)


def _lhs_in_memory_order(op) -> None:
    lhs, rhs = op.operands[0], op.operands[1]
    lhs_type, rhs_type = ir.RankedTensorType(lhs.type), ir.RankedTensorType(rhs.type)
    if not (lhs_type.has_static_shape and rhs_type.has_static_shape) or np.dtype(dtype_of(lhs_type)).kind not in "fc":
        return
    numbers = hlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    batch, contracting = list(numbers.lhs_batching_dimensions), list(numbers.lhs_contracting_dimensions)
    free = [d for d in range(lhs_type.rank) if d not in batch and d not in contracting]
    taken = set(numbers.rhs_batching_dimensions) | set(numbers.rhs_contracting_dimensions)
    reuse = int(np.prod([n for d, n in enumerate(rhs_type.shape) if d not in taken]))
    order = batch + free + contracting
    if not free or order == list(range(lhs_type.rank)) or reuse < _TRANSPOSE_REUSE:
        return
    with ir.InsertionPoint(op), op.location:
        moved = hlo.optimization_barrier([transpose(lhs, order)])
        numbers = hlo.DotDimensionNumbers.get(
            lhs_batching_dimensions=list(range(len(batch))), rhs_batching_dimensions=list(numbers.rhs_batching_dimensions),
            lhs_contracting_dimensions=list(range(len(batch) + len(free), lhs_type.rank)),
            rhs_contracting_dimensions=list(numbers.rhs_contracting_dimensions),
        )
    # The dot itself keeps its other attributes (precision, an algorithm a JAX function set).
    op.operands[0] = moved
    op.attributes["dot_dimension_numbers"] = numbers


def executable_rewrites(module_op: ir.Operation, platform: str, fp_contraction: bool = True) -> None:
    """The rewrites a specialized module gets just before XLA compiles it, for `platform`:
    the ones that depend on how XLA's code generator for it runs them."""
    if fp_contraction:
        contract_broadcast_products(module_op)
    if platform == "cpu":
        transposed_lhs_in_memory(module_op)


PYTHON_PASSES: dict[str, Callable[[ir.Operation], None]] = {
    "inline-private-calls": inline_private_calls,
    "fold-constant-reduce": fold_constant_reduce,
    "fold-shape-arithmetic": fold_shape_arithmetic,
    "fold-agreeing-if": fold_agreeing_if,
    "fold-constant-if": fold_constant_if,
    "static-elementwise-results": static_elementwise_results,
    "guard-empty-scatters": guard_empty_scatters,
    "atan2-of-one": atan2_of_one,
    "elementwise-before-layout": elementwise_before_layout,
    "compute-compared-once": compute_compared_once,
    "check-shape-assertions": check_shape_assertions,
    "contract-broadcast-products": contract_broadcast_products,
    "transposed-lhs-in-memory": transposed_lhs_in_memory,
}


def register_python_pass(name: str, fn: Callable[[ir.Operation], None]) -> None:
    """Make `fn(module_op)` usable by name in any pipeline string."""
    PYTHON_PASSES[name] = fn


# --- the runner -------------------------------------------------------------------


@dataclass
class PassRecord:
    name: str
    seconds: float
    ir_after: str | None = None
    # Operation counts by op name after the pass (when statistics were asked for).
    op_counts: Counter | None = None


@dataclass
class PipelineReport:
    pipeline: str
    passes: list[PassRecord] = field(default_factory=list)
    op_counts_before: Counter | None = None

    @property
    def total_seconds(self) -> float:
        return sum(p.seconds for p in self.passes)

    def timing_table(self) -> str:
        width = max([len(p.name) for p in self.passes] + [4])
        lines = [f"{'pass':<{width}}  {'ms':>9}"]
        lines += [f"{p.name:<{width}}  {p.seconds * 1e3:9.3f}" for p in self.passes]
        lines.append(f"{'total':<{width}}  {self.total_seconds * 1e3:9.3f}")
        return "\n".join(lines)

    def statistics_table(self) -> str:
        """Per pass: operations left and which op kinds it removed or created.

        (MLIR's own pass statistics are compiled out of release builds of jaxlib.)
        """
        if self.op_counts_before is None:
            return "no statistics recorded (run the pipeline with statistics=True)"
        width = max([len(p.name) for p in self.passes] + [len("input")])
        before = self.op_counts_before
        lines = [f"{'pass':<{width}}  {'ops':>6}  changes", f"{'input':<{width}}  {sum(before.values()):>6}"]
        for record in self.passes:
            after = record.op_counts
            # stablehlo <-> mhlo round trips rename every op: count ops by mnemonic.
            b, a = _by_mnemonic(before), _by_mnemonic(after)
            changes = [f"{a[op] - b[op]:+d} {op}" for op in sorted(set(a) | set(b)) if a[op] != b[op]]
            lines.append(f"{record.name:<{width}}  {sum(after.values()):>6}  {', '.join(changes) or '-'}")
            before = after
        return "\n".join(lines)


def _by_mnemonic(counts: Counter) -> Counter:
    out: Counter = Counter()
    for name, n in counts.items():
        dialect, _, mnemonic = name.partition(".")
        out[mnemonic if dialect in ("stablehlo", "mhlo") else name] += n
    return out


def count_ops(module: ir.Module) -> Counter:
    """Operation names in `module` (nested regions included), the module itself excluded."""
    counts: Counter = Counter()

    def visit(op):
        counts[op.name] += 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    counts[module.operation.name] -= 1
    return +counts


def split_pipeline(pipeline: str) -> list[str]:
    """Top-level elements of `builtin.module(...)` (nesting and options respected)."""
    text = pipeline.strip()
    prefix = "builtin.module("
    if not (text.startswith(prefix) and text.endswith(")")):
        raise PassPipelineError(
            f"pass pipeline must have the form 'builtin.module(...)', got {pipeline!r}"
        )
    inner = text[len(prefix):-1]
    elements, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
            if depth < 0:
                raise PassPipelineError(f"unbalanced brackets in pass pipeline {pipeline!r}")
        elif ch == "," and depth == 0:
            elements.append(inner[start:i].strip())
            start = i + 1
    if depth != 0:
        raise PassPipelineError(f"unbalanced brackets in pass pipeline {pipeline!r}")
    tail = inner[start:].strip()
    if tail:
        elements.append(tail)
    if any(not e for e in elements):
        raise PassPipelineError(f"empty pass name in pipeline {pipeline!r}")
    return elements


def validate_pipeline(pipeline: str, context: ir.Context) -> None:
    """Raise PassPipelineError unless every element of `pipeline` is a known pass."""
    register_passes()
    with context:
        for element in split_pipeline(pipeline):
            if element in PYTHON_PASSES:
                continue
            try:
                passmanager.PassManager.parse(f"builtin.module({element})")
            except ValueError as exc:
                detail = str(exc).splitlines()[0].rpartition("error: ")[2]
                raise PassPipelineError(f"invalid pass pipeline element {element!r}: {detail}") from None


def run_pipeline(
    module: ir.Module,
    pipeline: str = DEFAULT_PIPELINE,
    *,
    print_ir_after_all: bool = False,
    print_ir_after: tuple[str, ...] = (),
    timing: bool = False,
    statistics: bool = False,
    extra_passes: tuple[Callable[[ir.Operation], None], ...] = (),
) -> PipelineReport:
    """Run `pipeline` (then `extra_passes`) on `module` in place.

    The report holds, per pass, the IR after it (`print_ir_after_all`, or the passes
    named in `print_ir_after`), its time and (`statistics`) the op counts after it.
    """
    register_passes()
    report = PipelineReport(pipeline)
    elements = split_pipeline(pipeline)
    per_pass = print_ir_after_all or bool(print_ir_after) or timing or statistics
    if statistics:
        report.op_counts_before = count_ops(module)
    stages: list[tuple[str, Callable | str]] = []
    pending: list[str] = []
    for element in elements:
        if element in PYTHON_PASSES:
            if pending:
                stages.append((",".join(pending), ",".join(pending)))
                pending = []
            stages.append((element, PYTHON_PASSES[element]))
        elif per_pass:
            stages.append((element, element))
        else:
            pending.append(element)
    if pending:
        stages.append((",".join(pending), ",".join(pending)))
    stages += [(getattr(p, "__name__", "python-pass"), p) for p in extra_passes]

    with module.context:
        for name, stage in stages:
            start = time.perf_counter()
            if callable(stage):
                stage(module.operation)
            else:
                _run_mlir(module, stage)
            seconds = time.perf_counter() - start
            wanted = print_ir_after_all or bool(pass_names(name) & set(print_ir_after))
            report.passes.append(PassRecord(
                name, seconds, str(module) if wanted else None,
                count_ops(module) if statistics else None,
            ))
        _verify(module, f"after pipeline {pipeline}")
    return report


def pass_names(element: str) -> set[str]:
    """Pass and pass-manager names in a pipeline element: `func.func(cse{x=1})` -> both."""
    return set(re.findall(r"[A-Za-z][\w.-]*", re.sub(r"\{[^{}]*\}", "", element)))


def _run_mlir(module: ir.Module, elements: str) -> None:
    text = f"builtin.module({elements})"
    try:
        pm = passmanager.PassManager.parse(text)
    except ValueError as exc:
        raise PassPipelineError(f"invalid pass pipeline {text!r}: {exc}") from None
    try:
        pm.run(module.operation)
    except ir.MLIRError as exc:
        raise PassPipelineError(f"pass pipeline {text!r} failed: {exc}") from None


def _verify(module: ir.Module, when: str) -> None:
    from lowering.errors import VerificationError

    try:
        module.operation.verify()
    except ir.MLIRError as exc:
        raise VerificationError(f"module failed verification {when}: {exc}", str(module)) from None
