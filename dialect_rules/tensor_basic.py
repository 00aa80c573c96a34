"""Alloc, AllocEmpty, ARange, Eye, DeepCopyOp, TensorFromScalar, ScalarFromTensor,
MakeVector, Join, Split, Choose, PermuteRowElements, Default. Sizes may be run-time
scalars: they stay `?` until a call binds them."""

from __future__ import annotations

import functools

from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.compile.ops import DeepCopyOp, TypeCastingOp
from pytensor.graph.basic import Constant
from pytensor.tensor.shape import Shape_i
from pytensor.tensor.type import tensor
from pytensor.tensor.basic import (
    ARange,
    Alloc,
    AllocEmpty,
    Choose,
    Default,
    Eye,
    ExtractDiag,
    Join,
    MakeVector,
    Nonzero,
    PermuteRowElements,
    ScalarFromTensor,
    Split,
    TensorFromScalar,
    constant,
)

import numpy as np

from lowering.builders import (
    Dim,
    along_axis_index,
    all_of,
    any_of,
    broadcast_checked,
    broadcast_in_dim,
    broadcast_shapes,
    broadcast_to,
    compare,
    convert,
    diagonal,
    dim_add,
    dim_max,
    dim_min,
    dim_size,
    dim_sub,
    dim_value,
    divide,
    fit_static_dims,
    full,
    full_like,
    iota,
    ir_constant,
    remainder,
    reshape,
    select,
    shape_of,
    slice_axis,
    splat,
    take_along_axis,
    transpose,
    vector_element,
)
from dialect_rules.subtensor import checked_indices, nonzero, set_indexed
from lowering.errors import UnsupportedParameterError
from lowering.graph import constant_int, node_label
from lowering.regions import any_true
from lowering.registry import register_batched, register_lowering


def _is_length(var) -> bool:
    """Whether a size input is some tensor's length (`Shape_i`), never negative."""
    while var.owner is not None and isinstance(var.owner.op, (ScalarFromTensor, TensorFromScalar)):
        var = var.owner.inputs[0]
    return var.owner is not None and isinstance(var.owner.op, Shape_i)


def _dims(ctx, node, shape, variables):
    """Output dims: PyTensor's static sizes, else the run-time scalar shape inputs. A
    size that may be negative raises numpy's error at call time; the dim is clamped at 0
    so that specializing to it still succeeds (inside a loop body, which cannot raise, it
    is not, and the call fails as it specializes). A length is used as it is: it stays
    the same dim as its tensor's, as JAXOp's symbolic shapes need. `variables`: the
    node's inputs that `shape` lowers."""
    dims = []
    for static, value, var in zip(node.outputs[0].type.shape, shape, variables, strict=True):
        if static is not None:
            dims.append(static)
            continue
        size = convert(value, "int64")
        if ctx.can_raise() and not _is_length(var):
            zero = ir_constant(np.int64(0))
            ctx.runtime_check(compare(size, zero, "LT"), ValueError, "negative dimensions are not allowed")
            size = hlo.maximum(size, zero)
        dims.append(size)
    return dims


@register_lowering(Alloc)
def lower_alloc(ctx, node, value, *shape):
    value = convert(value, node.outputs[0].type.dtype)
    dims = _dims(ctx, node, shape, node.inputs[1:])
    if ctx.can_raise():
        _refuse_runtime_broadcast(ctx, node, value, dims)
    return broadcast_to(value, dims)


def _refuse_runtime_broadcast(ctx, node, value, dims) -> None:
    """Alloc's perform: a value dim PyTensor does not know to be 1 may not stretch at
    run time (a length-1 array where a longer one was meant). Shapes only, so the flag
    folds away once a call's shapes are specialized."""
    one = ir_constant(np.int64(1))
    value_dims = shape_of(value)
    stretched = [
        all_of(compare(dim_value(size), one, "EQ"), compare(dim_value(out), one, "NE"))
        for static, size, out in zip(node.inputs[0].type.shape, value_dims, dims[len(dims) - len(value_dims) :])
        if static is None
    ]
    if stretched:
        ctx.runtime_check(any_of(*stretched), ValueError, Alloc._runtime_broadcast_error_msg)


@register_lowering(AllocEmpty)
def lower_alloc_empty(ctx, node, *shape):
    # Uninitialized memory in PyTensor; zeros here, so results never depend on garbage.
    return full(0, _dims(ctx, node, shape, node.inputs), node.outputs[0].type.dtype)


@register_lowering(DeepCopyOp)
def lower_deep_copy(ctx, node, x):
    return x  # every XLA result is a fresh buffer


@register_lowering(TypeCastingOp)
def lower_type_cast(ctx, node, x):
    # ViewOp and its gradient markers (zero_grad, grad_clip, ...), OutputGuard, xtensor's
    # casts to and from TensorType, PyMC's InitialPoint: the same buffer, another type.
    return x


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


@register_lowering(Split)
def lower_split(ctx, node, x, axis, splits):
    """Split.perform's checks (length, sum, sign), then one slice per size. The slices
    are built from sizes clamped into the axis, so that bad sizes, which raise, still
    give the runtime valid shapes to specialize."""
    if not isinstance(node.inputs[1], Constant):
        raise UnsupportedParameterError(node, "a run-time axis", "the split axis must be constant")
    axis = int(node.inputs[1].data) % node.inputs[0].type.ndim
    n = shape_of(x)[axis]
    count = node.op.len_splits
    if isinstance(node.inputs[2], Constant):
        sizes = [int(s) for s in np.asarray(node.inputs[2].data)]
        if any(s < 0 for s in sizes):  # PyTensor types such an output with a negative length
            raise ValueError(f"Split sizes cannot be negative (node: {node_label(node)})")
    else:
        (length,) = shape_of(splits)
        splits = convert(splits, "int64")
        if length != count:  # zeros after it: elements 0..count-1 exist whatever its length
            ctx.runtime_check(compare(dim_value(length), dim_value(count), "NE"), ValueError,
                              "Split: the length of splits is not equal to n_splits")
            splits = hlo.concatenate([splits, full(0, [count], "int64")], 0)
        sizes = [vector_element(splits, i) for i in range(count)]
    total = functools.reduce(dim_add, sizes, 0)
    if not (isinstance(total, int) and isinstance(n, int)):  # else make_node checked
        ctx.runtime_check(compare(dim_value(total), dim_value(n), "NE"), ValueError,
                          f"Split: the split sizes do not sum to the length of axis {axis}")
    negative = [compare(s, ir_constant(np.int64(0)), "LT") for s in sizes if not isinstance(s, int)]
    if negative:
        ctx.runtime_check(any_of(*negative), ValueError, "Split: split sizes cannot be negative")
    outputs, start, end = [], 0, 0
    for size in sizes:
        end = dim_min(dim_add(end, dim_max(size, 0)), n)
        outputs.append(slice_axis(x, axis, start, end))
        start = end
    return tuple(outputs)


@register_batched(Split, broadcast=False)
def lower_batched_split(ctx, node, batch_ndim, x, axis, splits):
    """Blockwise(Split) whose axis and sizes are the same for every batch entry (the
    vectorized jacobian of a packed or rolled vector leaves them so): one Split along
    the axis behind the batch dims, its sizes the unbatched operand's one entry. Sizes
    that vary by entry would give entries of different shapes, which no tensor holds:
    refused."""
    core_axis, core_splits = node.inputs[1], node.inputs[2]
    if not (all(core_axis.type.broadcastable[:batch_ndim]) and all(core_splits.type.broadcastable[:batch_ndim])):
        raise UnsupportedParameterError(node, "an axis or split sizes that vary by batch entry",
                                        "the entries would have different shapes")
    value = constant_int(core_axis)
    if value is None:
        raise UnsupportedParameterError(node, "a run-time axis", "the split axis must be constant")
    shifted = constant(np.int64(value % (node.inputs[0].type.ndim - batch_ndim) + batch_ndim))
    if isinstance(core_splits, Constant):
        sizes = constant(core_splits.data.reshape(core_splits.data.shape[batch_ndim:]))
    else:
        sizes = tensor(dtype=core_splits.type.dtype, shape=core_splits.type.shape[batch_ndim:])
    core_node = node.op.core_op.make_node(node.inputs[0], shifted, sizes)
    return lower_split(ctx, core_node, x, ir_constant(shifted.data), reshape(splits, shape_of(splits)[batch_ndim:]))


@register_lowering(ExtractDiag)
def lower_extract_diag(ctx, node, x):
    """np.diagonal: move axis1, axis2 last, gather the (i, i + offset) pairs."""
    op = node.op
    rank = node.inputs[0].type.ndim
    perm = [i for i in range(rank) if i not in (op.axis1, op.axis2)] + [op.axis1, op.axis2]
    x = transpose(x, perm)
    return diagonal(x, op.offset)


@register_lowering(ARange)
def lower_arange(ctx, node, start, stop, step):
    """np.arange: ceil((stop - start) / step) elements (computed in float64), start + i * step,
    with numpy's length rules: one element where the quotient underflows to +0 (a step
    past the span), ValueError where it is NaN or does not fit an int64."""
    dtype = node.outputs[0].type.dtype
    f64 = functools.partial(convert, dtype="float64")
    ctx.runtime_check(compare(f64(step), ir_constant(0.0), "EQ"), ZeroDivisionError, "arange: step is zero")
    length = node.outputs[0].type.shape[0]
    bounds = [constant_int(v) for v in node.inputs]
    if length is None and None not in bounds and bounds[2] != 0:
        length = len(range(*bounds))  # numpy's length for integer bounds
    if length is None:
        zero = ir_constant(0.0)
        delta = hlo.subtract(f64(stop), f64(start))
        span = divide(delta, f64(step))
        nan = compare(span, span, "NE")
        too_long = compare(hlo.abs(span), ir_constant(2.0**63), "GE")
        ctx.runtime_check(nan, ValueError, "arange: cannot compute length")
        ctx.runtime_check(too_long, ValueError, "Maximum allowed size exceeded")
        # ceil as trunc + (trunc < span): ops the shape folding evaluates, unlike `ceil`
        whole = convert(span, "int64")
        rounded_up = compare(convert(whole, "float64"), span, "LT")
        underflow = all_of(  # span is +0 (not -0) where delta and step have one sign
            compare(span, zero, "EQ"), compare(delta, zero, "NE"),
            compare(compare(delta, zero, "GT"), compare(f64(step), zero, "GT"), "EQ"),
        )
        length = hlo.add(whole, convert(hlo.or_(rounded_up, underflow), "int64"))
        # 0 where a check fails: the shapes must hold until it raises
        length = hlo.maximum(select(hlo.or_(nan, too_long), ir_constant(np.int64(0)), length), ir_constant(np.int64(0)))
    if np.dtype(dtype).kind != "f":
        positions = iota([length], 0, dtype)
        step, start = (broadcast_in_dim(convert(v, dtype), [length], []) for v in (step, start))
        return hlo.add(hlo.multiply(positions, step), start)
    # numpy's fill: start, then start + step (perform's Python numbers: float64 or an
    # exact int), then start + i * delta, delta the difference of those two in the output
    # type (float16's in float32)
    floats = any(np.dtype(v.type.dtype).kind == "f" for v in (node.inputs[0], node.inputs[2]))
    pair = "float64" if floats else "int64"
    second = convert(hlo.add(convert(start, pair), convert(step, pair)), dtype)
    compute = "float32" if dtype == "float16" else dtype
    start, second = convert(start, compute), convert(second, compute)
    delta = hlo.subtract(second, start)
    positions = iota([length], 0, compute)
    values = hlo.add(broadcast_in_dim(start, [length], []), hlo.multiply(positions, broadcast_in_dim(delta, [length], [])))
    for i, value in ((1, second), (0, start)):  # exactly (start + 0 * inf is NaN)
        values = select(compare(positions, full_like(positions, i), "EQ"), broadcast_in_dim(value, [length], []), values)
    return convert(values, dtype)


@register_lowering(Eye)
def lower_eye(ctx, node, n, m, k):
    """Ones where column - row == k."""
    dtype = node.outputs[0].type.dtype
    dims = _dims(ctx, node, [n, m], node.inputs[:2])
    rows, cols = iota(dims, 0, "int64"), iota(dims, 1, "int64")
    diagonal = broadcast_in_dim(convert(k, "int64"), dims, [])
    return convert(compare(hlo.subtract(cols, rows), diagonal, "EQ"), dtype)


@register_lowering(Nonzero)
def lower_nonzero(ctx, node, x):
    """np.nonzero: the coordinates of the nonzero elements, their count measured at run
    time (see `subtensor.nonzero`)."""
    return tuple(nonzero(x))


# np.choose iterates `a` and the choices together, at most 64 arrays (NPY_MAXARGS).
_CHOOSE_MAX_CHOICES = 63


@register_lowering(Choose)
def lower_choose(ctx, node, a, choices):
    """np.choose(a, choices, mode): choices[a[I]][I] over the broadcast of `a` and one
    choice (`choices` less its first axis); `mode` says what an index outside [0, n)
    means: an error (raise), the index modulo n (wrap), the nearest end (clip)."""
    mode = node.op.mode
    n = shape_of(choices)[0]
    ctx.runtime_check(compare(dim_value(n), dim_value(0), "EQ"), ValueError, "0-length sequence.")
    if node.inputs[0].type.dtype == "uint64":  # numpy casts `a` to intp "safely"
        what = "scalar" if node.inputs[0].type.ndim == 0 else "array data"
        ctx.runtime_check(ir_constant(True), TypeError,
                          f"Cannot cast {what} from dtype('uint64') to dtype('int64') according to the rule 'safe'")
    ctx.runtime_check(compare(dim_value(n), dim_value(_CHOOSE_MAX_CHOICES), "GT"), ValueError,
                      "Need at least 0 and at most 64 array objects.")
    dims = broadcast_shapes(shape_of(a), shape_of(choices)[1:])
    index, flags = broadcast_checked(convert(a, "int64"), dims)
    shape = shape_of(choices)  # each choice aligned with the index on their last dims
    choices = reshape(choices, [n, *[1] * (len(dims) + 1 - len(shape)), *shape[1:]])
    choices, more = broadcast_checked(choices, [n, *dims])
    if flags or more:
        ctx.runtime_check(any_of(*flags, *more), ValueError,
                          "shape mismatch: objects cannot be broadcast to a single shape")
    top = splat(dim_value(dim_max(dim_sub(n, 1), 0)), index)
    zero = full_like(index, 0)
    if mode == "raise":
        outside = any_true(hlo.or_(compare(index, zero, "LT"), compare(index, top, "GT")))
        ctx.runtime_check(outside, ValueError, "invalid entry in choice array")
    elif mode == "wrap":  # Python's modulo: the divisor's sign
        size = splat(dim_value(n), index)
        rest = remainder(index, size)
        index = select(compare(rest, zero, "LT"), hlo.add(rest, size), rest)
    index = hlo.clamp(zero, index, top)
    return reshape(take_along_axis(choices, reshape(index, [1, *dims]), 0), dims)


@register_lowering(PermuteRowElements)
def lower_permute_row_elements(ctx, node, x, y):
    """PermuteRowElements.perform: each row (last axis) of x reordered by the matching row
    of y, out[..., :] = x[..., y], or with `inverse` out[..., y] = x (where y is no
    permutation, positions it misses are 0: numpy leaves them unset). Leading dims pair
    up, or broadcast where a type says 1; rows of length 1 broadcast."""
    rank = node.inputs[0].type.ndim
    if rank == 0:
        raise UnsupportedParameterError(node, "0-d x and y", "PermuteRowElements permutes rows of at least one element")
    mismatched, batch = [], []
    for d, (sx, sy) in enumerate(zip(node.inputs[0].type.shape[:-1], node.inputs[1].type.shape[:-1])):
        dx, dy = shape_of(x)[d], shape_of(y)[d]
        if sx == 1 or sy == 1:
            batch.append(dy if sx == 1 else dx)
            continue
        if not (isinstance(dx, int) and isinstance(dy, int) and dx == dy):
            # the check raises; both cut to the shorter, so that the shapes still agree
            mismatched.append(compare(dim_value(dx), dim_value(dy), "NE"))
            size = dim_min(dx, dy)
            x, y = slice_axis(x, d, 0, size), slice_axis(y, d, 0, size)
        batch.append(shape_of(x)[d])
    lx, ly = shape_of(x)[-1], shape_of(y)[-1]
    one = dim_value(1)
    mismatched.append(all_of(compare(dim_value(lx), dim_value(ly), "NE"),
                             compare(dim_value(lx), one, "NE"), compare(dim_value(ly), one, "NE")))
    ctx.runtime_check(any_of(*mismatched), ValueError, "Dimension mismatch")
    if node.op.inverse:  # out[..., y] = x, of x's length (y's where x's is 1)
        length = _if_one(lx, ly, lx)
        ctx.runtime_check(all_of(compare(dim_value(ly), one, "EQ"), compare(dim_value(lx), one, "NE")), ValueError,
                          "shape mismatch: value array could not be broadcast to indexing result")
    else:
        length = lx
    flags = []
    y = checked_indices(convert(y, "int64"), length, flags, node.inputs[1].type.dtype.startswith("uint"))
    ctx.runtime_check(any_of(*flags), IndexError, "index out of bounds")
    x = broadcast_in_dim(x, [*batch, lx], range(rank))
    y = broadcast_in_dim(y, [*batch, ly], range(rank))
    if not node.op.inverse:
        rows = take_along_axis(x, y, rank - 1)
        return broadcast_in_dim(rows, [*batch, _if_one(ly, lx, ly)], range(rank))
    if isinstance(lx, int) and (lx == 1 or lx == ly):
        values = broadcast_in_dim(x, [*batch, ly], range(rank))
    else:  # x[..., min(i, lx - 1)]: x itself where lx == ly, its one element where lx == 1
        last = splat(dim_value(dim_max(dim_sub(lx, 1), 0)), y)
        values = take_along_axis(x, hlo.minimum(iota([*batch, ly], rank - 1, "int64"), last), rank - 1)
    out = full(0, [*batch, length], node.outputs[0].type.dtype)
    return set_indexed(ctx, out, list(range(rank)), along_axis_index(y, rank - 1), values, front=True)


def _if_one(d: Dim, then: Dim, otherwise: Dim) -> Dim:
    """`then` where the dim `d` is 1, else `otherwise` (decided when lowering if d is static)."""
    if isinstance(d, int):
        return then if d == 1 else otherwise
    return select(compare(d, dim_value(1), "EQ"), dim_value(then), dim_value(otherwise))


@register_lowering(Default)
def lower_default(ctx, node, x, default):
    """x, its dims checked at call time against the output's static ones. The runtime
    takes arrays only: a None argument, the one Default replaces, is a TypeError naming
    the input (README)."""
    shape = node.outputs[0].type.shape
    for i, (own, size) in enumerate(zip(node.inputs[0].type.shape, shape)):
        if size is None or own == size:
            continue
        if own is not None:
            raise ValueError(f"Default: x has static shape {node.inputs[0].type.shape}, its output "
                             f"{shape} (node: {node_label(node)})")
        ctx.runtime_check(compare(dim_value(dim_size(x, i)), dim_value(size), "NE"), ValueError,
                          f"Default: dim {i} of x is not the default's {size}")
    return fit_static_dims(x, shape)
