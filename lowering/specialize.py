"""Signature -> specialized module: the polymorphic module refined to one call's types.

Value-dependent shapes (`alloc(v, n)`, `arange(n)`) cannot be refined from types
alone; for those, the 0-d arguments are replaced by their values first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from jax.extend.mlir import ir
from jax.extend.mlir.dialects import func
from jax.extend.mlir.dialects import stablehlo as hlo

from lowering.builders import ELEMENTWISE_OPS, dense_attr, static_slice, symbol_name
from lowering.errors import PassPipelineError
from lowering.passes import (
    FOLD_AND_REFINE,
    LEGALIZE_CHLO,
    SHAPE_TO_STABLEHLO,
    ops_named,
    run_pipeline,
    specialize_pipeline,
)
from lowering.types import is_rng_type, tensor_type

_DYNAMIC_TYPE = re.compile(r"tensor<[^>]*\?")
_STATIC_DIMS = re.compile(r"tensor<((?:\d+x)+)")
# `stablehlo.get_dimension_size` is 32-bit: larger dims read through it would wrap.
_MAX_READABLE_DIM = 2**31 - 1
_MAX_FOLD_ROUNDS = 4


@dataclass(frozen=True)
class Signature:
    """What a specialized executable depends on: shapes, dtypes, and shape-feeding values."""

    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    values: tuple[tuple[int, object], ...] = ()  # (argument index, scalar value)


def is_fully_static(module: ir.Module | str) -> bool:
    """Whether no `?` dim is left in `module` (or in its text, already printed)."""
    return _DYNAMIC_TYPE.search(module if isinstance(module, str) else str(module)) is None


_DYNAMIC_OP = re.compile(r"stablehlo\.(real_dynamic_slice|dynamic_(broadcast_in_dim|reshape|iota|pad|gather|conv))")


def has_dynamic_ops(module: ir.Module) -> bool:
    """Whether ops whose shapes come from operands are left (XLA cannot compile them)."""
    return _DYNAMIC_OP.search(str(module)) is not None


def specialize(module_bytes: bytes, context: ir.Context, signature: Signature) -> ir.Module:
    """Parse a fresh copy of the module and refine it to `signature`."""
    with context, ir.Location.unknown():
        module = ir.Module.parse(module_bytes)
        if signature.values:
            _bind_values(module, dict(signature.values))
        arg_types = [
            str(tensor_type(shape, dtype)) for shape, dtype in zip(signature.shapes, signature.dtypes)
        ]
        reads_dims = b"get_dimension_size" in module_bytes
        try:
            run_pipeline(module, specialize_pipeline(arg_types))
            # Shapes computed with arithmetic refine-shapes does not fold (float math, as in
            # arange's length, or bound scalar values) need general folding between rounds.
            # A round that changes nothing ends them: the next would not either (a boolean
            # mask's `?` is sized by data, which only a run measures: `runtime_dims`).
            text = str(module)
            for _ in range(_MAX_FOLD_ROUNDS):
                if is_fully_static(text):
                    break
                run_pipeline(module, FOLD_AND_REFINE)
                text, before = str(module), text
                if text == before:
                    break
        except PassPipelineError:
            if reads_dims:
                _check_dims_readable(module)
            # (operands first: arguments that do not broadcast together also leave the
            # `if`s after them, such as `converge_compacting`'s rows, with branches of
            # two shapes, and the elementwise op is where the user's graph meets them)
            _check_operands_agree(module)
            _check_branches_agree(module)
            raise
        if reads_dims:
            _check_dims_readable(module)
        run_pipeline(module, LEGALIZE_CHLO)
    return module


# Dynamic-shape ops and the operands that give their result shape.
_SHAPE_OPERANDS = {
    "stablehlo.real_dynamic_slice": (1, 2, 3),
    "stablehlo.dynamic_broadcast_in_dim": (1,),
    "stablehlo.dynamic_reshape": (1,),
    "stablehlo.dynamic_iota": (0,),
    "stablehlo.dynamic_pad": (2, 3, 4),
}


@dataclass(frozen=True)
class RuntimeDims:
    """A specialized module whose last `?` dims are computed by the program itself
    (the steps a while-Scan took): a probe module returns the shape operands that
    make them, and a run's values refine the module to static shapes."""

    module_text: str
    # The measured values: (n, r), result r of the n-th op of @main's body, or (-1, i),
    # @main's i-th argument.
    targets: tuple[tuple[int, int], ...]


def runtime_dims(module: ir.Module) -> RuntimeDims | None:
    """The values computed in @main that the remaining `?` dims come from (shape
    operands) and that a probe can compute (nothing they depend on has a `?` dim);
    None when there are none. Sizes that depend on other measured sizes are measured in
    a next round. A shape operand of an op inside a loop or a branch counts where it is
    a value of @main's body that the region reads (a prefix sum's loop over a run-time
    length)."""
    block = main_function(module).regions[0].blocks[0]
    computable = {a: not _DYNAMIC_TYPE.search(str(a.type)) for a in block.arguments}
    where = {a: (-1, i) for i, a in enumerate(block.arguments)}
    targets = {}

    def add_targets(op):
        name = op.name
        if name in _SHAPE_OPERANDS and op.results and _DYNAMIC_TYPE.search(str(op.results[0].type)):
            operands = list(op.operands)
            for k in _SHAPE_OPERANDS[name]:
                v = operands[k]
                if computable.get(v, False) and not _is_constant(v):
                    targets.setdefault(where[v], None)
        return ir.WalkResult.ADVANCE

    for n, op in enumerate(block.operations):
        operands = list(op.operands)
        ok = all(computable.get(v, False) for v in operands)
        if ok and len(op.regions):
            ok = not _DYNAMIC_TYPE.search(str(op))
        for i, r in enumerate(op.results):
            computable[r] = ok and not _DYNAMIC_TYPE.search(str(r.type))
            where[r] = (n, i)
        op.operation.walk(add_targets)  # the op and those in its regions
    if not targets:
        return None
    return RuntimeDims(str(module), tuple(targets))


def _target_values(block, targets) -> list[ir.Value]:
    ops = list(block.operations)
    return [block.arguments[r] if n < 0 else ops[n].results[r] for n, r in targets]


def _is_constant(v: ir.Value) -> bool:
    return isinstance(v, ir.OpResult) and v.owner.name == "stablehlo.constant"


def probe_module(dims: RuntimeDims, context: ir.Context) -> ir.Module:
    """@main returning only the measured shape operands; the rest is dead code."""
    with context, ir.Location.unknown():
        module = ir.Module.parse(dims.module_text)
        fn = main_function(module)
        ops = list(fn.regions[0].blocks[0].operations)
        values = _target_values(fn.regions[0].blocks[0], dims.targets)
        with ir.InsertionPoint(ops[-1]):
            func.return_(values)
        ops[-1].operation.erase()
        inputs = list(ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).inputs)
        fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, [v.type for v in values]))
        run_pipeline(module, FOLD_AND_REFINE)
        if not is_fully_static(module):
            raise ValueError("a shape computed at run time depends on another one")
        run_pipeline(module, LEGALIZE_CHLO)
    return module


def bind_runtime_dims(dims: RuntimeDims, context: ir.Context, measured) -> ir.Module:
    """The module with the measured shape operands as constants, refined again."""
    with context, ir.Location.unknown():
        module = ir.Module.parse(dims.module_text)
        block = main_function(module).regions[0].blocks[0]
        first = list(block.operations)[0]
        for target, value in zip(_target_values(block, dims.targets), measured, strict=True):
            # every use, those inside loops and branches too, reads the measured value
            with ir.InsertionPoint(first):
                constant = hlo.constant(dense_attr(np.asarray(value)))
            target.replace_all_uses_with(constant)
        run_pipeline(module, SHAPE_TO_STABLEHLO)
        for _ in range(_MAX_FOLD_ROUNDS):
            run_pipeline(module, FOLD_AND_REFINE)
            if is_fully_static(module):
                break
        run_pipeline(module, LEGALIZE_CHLO)
    return module


def drop_folded_checks(module: ir.Module) -> bool:
    """Remove @main's check-flag result when specialization folded every check to
    false (shape checks, once shapes are known): the runtime then reads nothing back
    for them. Whether it was removed."""
    fn = main_function(module)
    ret = list(fn.regions[0].blocks[0].operations)[-1]
    flags = ret.operands[len(ret.operands) - 1]
    if not isinstance(flags, ir.OpResult) or flags.owner.name != "stablehlo.constant":
        return False
    attr = ir.DenseElementsAttr(flags.owner.attributes["value"])
    if not (attr.is_splat and not ir.BoolAttr(attr.get_splat_value()).value):
        return False
    with module.context, ir.Location.unknown():
        with ir.InsertionPoint(ret):
            func.return_(list(ret.operands)[:-1])
        ret.erase()
        fn_type = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        fn.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(list(fn_type.inputs), list(fn_type.results)[:-1])
        )
    return True


# Small results whose values float64 holds exactly come back packed into one float64
# vector: one device-to-host read and one copy instead of one per result (about 7 µs
# each on CPU). Converting is elementwise; a bitcast to bytes instead changes the index
# of every element, and XLA then recomputed fused producers per byte (an integer
# power's 64 squarings took its compiler minutes).
_PACK_BELOW_ELEMENTS = 1 << 13
_EXACT_IN_FLOAT64 = frozenset("bool int8 int16 int32 uint8 uint16 uint32 float16 float32 float64".split())


@dataclass(frozen=True)
class PackedResults:
    """Where @main's small results are in its last result, a float64 vector: per
    original result index, (element offset, dtype, shape)."""

    parts: dict
    kept: tuple[int, ...]  # original indices of the results returned as themselves


def pack_small_results(module: ir.Module) -> PackedResults | None:
    """Rewrite @main to return its small results that float64 holds exactly as one
    float64 vector, after the others. None if fewer than two results qualify."""
    from lowering.types import dtype_of

    fn = main_function(module)
    ret = list(fn.regions[0].blocks[0].operations)[-1]
    values = list(ret.operands)
    packable = []
    for i, v in enumerate(values):
        t = ir.RankedTensorType(v.type)
        if t.has_static_shape and dtype_of(t) in _EXACT_IN_FLOAT64 and 0 < np.prod(t.shape) <= _PACK_BELOW_ELEMENTS:
            packable.append(i)
    if len(packable) < 2:
        return None
    parts, pieces, offset = {}, [], 0
    with module.context, ir.Location.unknown(), ir.InsertionPoint(ret):
        f64 = ir.F64Type.get()
        for i in packable:
            t = ir.RankedTensorType(values[i].type)
            size = int(np.prod(t.shape))
            flat = hlo.reshape(ir.RankedTensorType.get([size], t.element_type), values[i])
            if t.element_type != f64:
                flat = hlo.convert(ir.RankedTensorType.get([size], f64), flat)
            pieces.append(flat)
            parts[i] = (offset, np.dtype(dtype_of(t)), tuple(t.shape))
            offset += size
        packed = hlo.concatenate(pieces, 0)
        kept = [i for i in range(len(values)) if i not in parts]
        func.return_([values[i] for i in kept] + [packed])
        ret.erase()
        fn_type = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        fn.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(list(fn_type.inputs), [values[i].type for i in kept] + [packed.type])
        )
    return PackedResults(parts, tuple(kept))


# Small float64 inputs travel to @main packed into one vector where there are at least
# this many: each argument costs the C++ dispatch 1.5-2.5 µs; joining their bytes costs
# about 0.1 µs each plus 0.5 µs, and checking their shapes and dtypes a little more
# (`Compiled._packed_call`). Against passing them apart, in one process: a hierarchical
# regression's 7 inputs 45.0 -> 36.8 µs a call; ARMA's 4 49.3 -> 47.0; 3 (eight schools,
# a Student-t regression, GARCH, a normal mixture) 0.6-1.2 µs faster; 2 (a linear
# regression, the LKJ model, a negative binomial) 0.5-2.9 µs slower.
_PACK_MIN_ARGUMENTS = 3


@dataclass(frozen=True)
class PackedArguments:
    """Small float64 arguments of static shape passed to @main as one vector, after the
    others (constants included): per packed input index, (element offset, shape)."""

    parts: dict
    size: int  # elements of the vector
    shapes: list  # of the packed inputs, in order (what a call checks)
    dtypes: list  # float64 for each: what a call's arguments must have to travel as bytes

    @staticmethod
    def of(input_types, excluded=(), most: int = _PACK_BELOW_ELEMENTS) -> PackedArguments | None:
        """The inputs to pack among PyTensor's `input_types`: float64 tensors of a static
        shape and at most `most` elements, not `excluded`. None if fewer than
        _PACK_MIN_ARGUMENTS qualify."""
        parts, offset = {}, 0
        for i, t in enumerate(input_types):
            shape = getattr(t, "shape", None)
            if (i in excluded or shape is None or None in shape or getattr(t, "dtype", None) != "float64"
                    or is_rng_type(t)):
                continue
            size = int(np.prod(shape))
            if 0 < size <= most:
                parts[i] = (offset, tuple(shape))
                offset += size
        if len(parts) < _PACK_MIN_ARGUMENTS:
            return None
        shapes = [shape for _, shape in parts.values()]
        return PackedArguments(parts, offset, shapes, [np.dtype(np.float64)] * len(parts))


def pack_small_arguments(module: ir.Module, packed: PackedArguments) -> None:
    """Rewrite @main to read the arguments `packed` names from one float64 vector, a new
    last argument: a static slice of it, reshaped, replaces each, which is dropped."""
    fn = main_function(module)
    block = fn.regions[0].blocks[0]
    with module.context, ir.Location.unknown():
        vector = block.add_argument(ir.RankedTensorType.get([packed.size], ir.F64Type.get()), ir.Location.unknown())
        with ir.InsertionPoint.at_block_begin(block):
            for i, (offset, shape) in packed.parts.items():
                size = int(np.prod(shape))
                piece = static_slice(vector, [offset], [offset + size])
                arg = block.arguments[i]
                arg.replace_all_uses_with(hlo.reshape(arg.type, piece))
        _erase_arguments(fn, packed.parts)


# Hoisted constants (LoweringOptions.hoist_constants_over) of at most this many bytes
# are compiled into the executable rather than passed to it: each argument costs jaxlib's
# dispatch about 0.4 µs a call even as a device buffer, and a zero-inflated Poisson
# regression's 8 constants of 16-80 kB were 3.4 of its 58.4 µs. Larger ones stay
# arguments, so that compiles stay quick and executables small.
INLINE_CONSTANT_BYTES = 1 << 17


def small_constants(n_inputs: int, hoisted) -> dict[int, np.ndarray]:
    """The hoisted constants (`HoistedConstant`s, @main's arguments after its `n_inputs`
    inputs) that executables hold themselves, by argument index."""
    return {n_inputs + j: c.value for j, c in enumerate(hoisted) if c.value.nbytes <= INLINE_CONSTANT_BYTES}


def inline_constants(module: ir.Module, constants: dict[int, np.ndarray]) -> None:
    """Rewrite @main to hold the arguments `constants` names (argument index -> value)
    as `stablehlo.constant`s, and drop them from its signature."""
    fn = main_function(module)
    block = fn.regions[0].blocks[0]
    with module.context, ir.Location.name("hoisted constant"), ir.InsertionPoint.at_block_begin(block):
        for i, value in constants.items():
            block.arguments[i].replace_all_uses_with(hlo.constant(dense_attr(value)))
        _erase_arguments(fn, constants)


def _erase_arguments(fn, indices) -> None:
    """Drop the arguments at `indices` (no longer used) from `fn` and its type."""
    block = fn.regions[0].blocks[0]
    for i in sorted(indices, reverse=True):
        block.erase_argument(i)
    fn_type = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    fn.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([a.type for a in block.arguments], list(fn_type.results))
    )


def _check_dims_readable(module: ir.Module) -> None:
    """Refuse dims that the module's 32-bit dimension reads would silently wrap."""
    largest = max(
        (int(d) for dims in _STATIC_DIMS.findall(str(module)) for d in dims.split("x") if d),
        default=0,
    )
    if largest > _MAX_READABLE_DIM:
        raise ValueError(
            f"a dimension of size {largest} is larger than 2**31 - 1, the most a "
            "dynamically shaped StableHLO program can read (get_dimension_size is 32-bit); "
            "give the graph static shapes for arrays this large"
        )


def _check_branches_agree(module: ir.Module) -> None:
    """Name the cause when refinement failed on an `if`/`case` whose branches give one
    result two shapes (refine-shapes only says it did not converge): the arguments
    make the result's shape depend on the condition's value, which XLA cannot hold."""
    for op in ops_named(module.operation, "stablehlo.if", "stablehlo.case"):
        returned = [_terminator(region).operands for region in op.regions]
        for i in range(len(op.results)):
            types = [ir.RankedTensorType(values[i].type) for values in returned]
            shapes = list(dict.fromkeys(tuple(t.shape) for t in types if t.has_static_shape))
            if len(shapes) > 1:
                where = op.location.name_str if isinstance(op.location, ir.NameLoc) else "a conditional"
                shown = " and ".join(map(str, shapes))
                raise PassPipelineError(
                    f'error: "{where}": its branches give output {i} the shapes {shown}; '
                    "the result's shape would depend on the condition's value, and XLA needs one"
                )


def _check_operands_agree(module: ir.Module) -> None:
    """Name the node when refinement failed (refine-shapes may say only that it did not
    converge, as in a module of many loops) and an elementwise op (`ELEMENTWISE_OPS`) was
    left with operands of two static shapes: the arguments' shapes do not fit that node."""
    for op in ops_named(module.operation, *ELEMENTWISE_OPS):
        shapes = []
        for value in op.operands:
            t = ir.RankedTensorType(value.type)
            if t.rank and t.has_static_shape and tuple(t.shape) not in shapes:
                shapes.append(tuple(t.shape))
        if len(shapes) > 1 and isinstance(op.location, ir.NameLoc):
            shown = " and ".join(map(str, shapes))
            raise PassPipelineError(
                f'error: "{op.location.name_str}": elementwise operands of the shapes {shown}, '
                "which do not broadcast together"
            )


def _terminator(region):
    operations = region.blocks[0].operations
    return operations[len(operations) - 1]


def main_function(module: ir.Module):
    for op in module.body.operations:
        if op.operation.name == "func.func" and symbol_name(op) == "main":
            return op
    raise ValueError("module has no @main")


def _bind_values(module: ir.Module, values: dict[int, object]) -> None:
    """Replace the uses of @main's scalar arguments by constants of the given values."""
    block = main_function(module).regions[0].blocks[0]
    with ir.InsertionPoint.at_block_begin(block), ir.Location.unknown():
        for index, value in values.items():
            arg = block.arguments[index]
            dtype = np.dtype(_dtype_name(arg.type))
            const = hlo.constant(dense_attr(np.asarray(value, dtype=dtype)))
            arg.replace_all_uses_with(const)


def _dtype_name(t: ir.Type) -> str:
    from lowering.types import dtype_of

    return dtype_of(t)


def scalar_arguments(arg_types) -> tuple[int, ...]:
    """Indices of 0-d real arguments: the ones whose values can feed shapes
    (`arange(start, n, step)` has a length computed from floats too)."""
    return tuple(
        i for i, t in enumerate(arg_types)
        if getattr(t, "ndim", None) == 0 and np.dtype(t.dtype).kind in "biuf"
    )
