"""CAReduce (sum, prod, max, min, all, any, any associative scalar op), Argmax,
Softmax, SoftmaxGrad, LogSoftmax."""

from __future__ import annotations

import numpy as np
import pytensor.scalar as ps
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.tensor.elemwise import CAReduce
from pytensor.tensor.math import Argmax
from pytensor.tensor.special import LogSoftmax, Softmax

try:  # pytensor 3 builds the softmax gradient from other Ops
    from pytensor.tensor.special import SoftmaxGrad
except ImportError:  # pragma: no cover - pytensor >= 3
    SoftmaxGrad = None

from dialect_rules.elemwise import scalar_apply
from dialect_rules.subtensor import whole_mask_selection
from lowering.builders import (
    broadcast_in_dim,
    compare,
    convert,
    dim_product,
    dim_value,
    divide,
    full_like,
    ir_constant,
    iota,
    numpy_order,
    reshape,
    select,
    shape_of,
    transpose,
    value_dtype,
)
from lowering.errors import UnsupportedParameterError
from lowering.graph import lower_node
from lowering.regions import any_true, fold, identity_value, reduce
from lowering.registry import register_lowering


def _axes(axis, ndim) -> tuple[int, ...]:
    return tuple(range(ndim)) if axis is None else tuple(a % ndim for a in axis)


def _check_nonempty(ctx, x, axes, what: str) -> None:
    """numpy raises on an empty reduction without identity; so do we, at call time."""
    dims = [d for i, d in enumerate(shape_of(x)) if i in axes]
    if all(isinstance(d, int) and d > 0 for d in dims):
        return
    size = dim_product(dims)
    ctx.runtime_check(
        compare(dim_value(size), ir_constant(np.int64(0)), "EQ"),
        ValueError,
        f"zero-size array to reduction operation {what} which has no identity",
    )


@register_lowering(CAReduce, inner_ops=lambda op: [op.scalar_op])
def lower_careduce(ctx, node, x):
    op = node.op
    out_dtype = node.outputs[0].type.dtype
    acc_dtype = op.acc_dtype or out_dtype
    axes = _axes(op.axis, node.inputs[0].type.ndim)
    identity = identity_value(op.scalar_op, acc_dtype)
    if identity is None:
        raise UnsupportedParameterError(
            node, f"scalar_op={op.scalar_op}", "reductions need an op with a known identity"
        )
    masked = _masked_source(ctx, node, axes)
    if masked is not None:  # reduce(s[m]) over all of it: reduce(where(m, s, identity))
        source, mask = masked
        source = convert(source, acc_dtype)
        x, axes = select(mask, source, full_like(source, identity)), tuple(range(len(shape_of(source))))
        if getattr(op.ufunc, "identity", 0) is None and ctx.can_raise():
            empty = hlo.not_(any_true(mask))
            ctx.runtime_check(empty, ValueError, f"zero-size array to reduction operation {op.scalar_op} which has no identity")
    elif getattr(op.ufunc, "identity", 0) is None:
        _check_nonempty(ctx, x, axes, str(op.scalar_op))
    if op.scalar_op == ps.scalar_maximum and np.dtype(acc_dtype).kind == "c":
        # numpy keeps the first NaN it meets, and the parts tell which one it kept: with
        # its index beside each value, the order XLA reduces in cannot change it.
        out, _ = _max_with_index(convert(x, acc_dtype), axes)
        return convert(out, out_dtype)
    extremum = _FLOAT_EXTREMA.get(op.scalar_op) if np.dtype(acc_dtype).kind == "f" else None
    if extremum is not None:  # (fold's body keeps NaN)
        return convert(fold(convert(x, acc_dtype), axes, extremum, identity), out_dtype)
    scalar_node = scalar_apply(op.scalar_op, [acc_dtype, acc_dtype], [acc_dtype])

    def body(accs, xs):
        return lower_node(ctx, scalar_node, [accs[0], xs[0]], own_location=False)

    (out,) = reduce([convert(x, acc_dtype)], [ir_constant(identity, acc_dtype)], axes, body)
    return convert(out, out_dtype)


_FLOAT_EXTREMA = {ps.scalar_maximum: hlo.maximum, ps.scalar_minimum: hlo.minimum}


def _masked_source(ctx, node, axes):
    """(s, m)'s values where the node reduces the whole of s[m] (`whole_mask_selection`)."""
    selection = whole_mask_selection(node.inputs[0])
    if selection is None or axes != (0,):
        return None
    env = ctx.envs[-1]
    if any(v not in env for v in selection):
        return None
    return tuple(env[v] for v in selection)


def _argmax_body(dtype):
    """Pick (value, index) pairs numpy's way: NaN (a complex with a NaN part) wins,
    complex values compare lexicographically, ties go to the lower index."""

    def body(accs, xs):
        (a, ia), (b, ib) = accs, xs
        pick_a = numpy_order(a, b, "GT")
        lower_index = compare(ia, ib, "LT")
        if np.dtype(dtype).kind in "fc":
            a_nan, b_nan = compare(a, a, "NE"), compare(b, b, "NE")
            pick_a = hlo.or_(pick_a, hlo.and_(a_nan, hlo.not_(b_nan)))
            same = hlo.or_(compare(a, b, "EQ"), hlo.and_(a_nan, b_nan))
        else:
            same = compare(a, b, "EQ")
        pick_a = hlo.or_(pick_a, hlo.and_(same, lower_index))
        return [select(pick_a, a, b), select(pick_a, ia, ib)]

    return body


def _max_with_index(x, axes):
    """x's maximum over `axes` in numpy's order (`_argmax_body`), and its index into
    those axes flattened in C order, as numpy's argmax counts."""
    dtype = value_dtype(x)
    dims = shape_of(x)
    kept = [i for i in range(len(dims)) if i not in axes]
    flat = reshape(transpose(x, kept + list(axes)), [dims[i] for i in kept] + [dim_product([dims[i] for i in axes])])
    index = iota(shape_of(flat), len(kept), "int64")
    lowest = ir_constant(identity_value(ps.scalar_maximum, dtype), dtype)
    value, where = reduce(
        [flat, index], [lowest, ir_constant(np.int64(0))], [len(kept)], _argmax_body(dtype)
    )
    return value, where


@register_lowering(Argmax)
def lower_argmax(ctx, node, x):
    axes = _axes(node.op.axis, node.inputs[0].type.ndim)
    _check_nonempty(ctx, x, axes, "argmax")
    return _max_with_index(x, axes)[1]


# --- softmax family: the same formulas as scipy.special, which Op.perform calls ---


def _keepdims_reduce(ctx, x, axes, scalar_op_name):
    """Reduce over `axes` and broadcast back to x's shape."""

    scalar_op = {"max": ps.scalar_maximum, "sum": ps.add}[scalar_op_name]
    dtype = value_dtype(x)
    identity = identity_value(scalar_op, dtype)
    if scalar_op_name == "max" and np.dtype(dtype).kind == "f":  # (fold's body keeps NaN)
        out = fold(x, axes, hlo.maximum, identity)
    else:
        node = scalar_apply(scalar_op, [dtype, dtype], [dtype])
        (out,) = reduce(
            [x], [ir_constant(identity, dtype)], axes,
            lambda accs, xs: lower_node(ctx, node, [accs[0], xs[0]], own_location=False),
        )
    dims = shape_of(x)
    kept = [i for i in range(len(dims)) if i not in axes]
    return broadcast_in_dim(out, dims, kept)


def _softmax_axes(node):
    """The reduced axes (after refusing an integer output, which PyTensor gives an
    integer input while perform returns scipy's floats in it)."""
    dtype = node.outputs[0].type.dtype
    if np.dtype(dtype).kind not in "fc":
        raise UnsupportedParameterError(
            node, f"input dtype {node.inputs[0].type.dtype}",
            f"PyTensor types the output {dtype} but its values are floats: cast the input to a float first",
        )
    axis = node.op.axis  # an int in pytensor 2, a tuple in pytensor 3
    if axis is not None and not isinstance(axis, tuple):
        axis = (axis,)
    return _axes(axis, node.inputs[0].type.ndim)


@register_lowering(Softmax)
def lower_softmax(ctx, node, x):
    axes = _softmax_axes(node)
    x = convert(x, node.outputs[0].type.dtype)
    e = hlo.exponential(hlo.subtract(x, _keepdims_reduce(ctx, x, axes, "max")))
    return divide(e, _keepdims_reduce(ctx, e, axes, "sum"))


@register_lowering(LogSoftmax)
def lower_log_softmax(ctx, node, x):
    axes = _softmax_axes(node)
    x = convert(x, node.outputs[0].type.dtype)
    x_max = _keepdims_reduce(ctx, x, axes, "max")
    # scipy shifts by 0 where the max is not finite (all -inf rows stay -inf, not NaN)
    x_max = select(hlo.is_finite(x_max), x_max, full_like(x_max, 0))
    shifted = hlo.subtract(x, x_max)
    total = _keepdims_reduce(ctx, hlo.exponential(shifted), axes, "sum")
    return hlo.subtract(shifted, hlo.log(total))


def lower_softmax_grad(ctx, node, dy, sm):
    axes = _softmax_axes(node)
    dtype = node.outputs[0].type.dtype
    dy, sm = convert(dy, dtype), convert(sm, dtype)
    dy_sm = hlo.multiply(dy, sm)
    return hlo.subtract(dy_sm, hlo.multiply(_keepdims_reduce(ctx, dy_sm, axes, "sum"), sm))


if SoftmaxGrad is not None:
    register_lowering(SoftmaxGrad)(lower_softmax_grad)
