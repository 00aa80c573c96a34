"""Scalar Ops (inside Elemwise and Composite), applied to whole tensors of one shape.

Families are tables plus one generic rule each. Every rule returns exactly the dtype
PyTensor's output has, computing the way numpy's ufunc (Elemwise.perform) does.
Transcendental and special functions live in `special.py`.
"""

from __future__ import annotations

from functools import partial, reduce

import numpy as np
import pytensor.scalar as ps
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.tensor.math import MulWithoutZeros

from lowering.builders import compare, convert, full_like, ir_constant, select, value_dtype
from lowering.errors import UnsupportedParameterError
from lowering.regions import reduce as reduce_region
from lowering.registry import register_lowering
from lowering.types import static_shape


def out_dtype(node, i: int = 0) -> str:
    return node.outputs[i].type.dtype


def kind(dtype) -> str:
    return np.dtype(dtype).kind


def common_dtype(node) -> str:
    """The dtype numpy computes a mixed-dtype comparison or op in."""
    return np.result_type(*[np.dtype(i.type.dtype) for i in node.inputs]).name


# --- arithmetic -------------------------------------------------------------------


def _nary(builder, ctx, node, *xs):
    """Cast every operand to the output dtype, then fold `builder` over them."""
    dtype = out_dtype(node)
    return reduce(builder, [convert(x, dtype) for x in xs])


# numpy's bool arithmetic is logical: True + True is True, True * False is False.
_ADD = {"b": hlo.or_}
_MUL = {"b": hlo.and_}


def _by_kind(table, default):
    def rule(ctx, node, *xs):
        return _nary(table.get(kind(out_dtype(node)), default), ctx, node, *xs)

    return rule


register_lowering(ps.Add)(_by_kind(_ADD, hlo.add))
register_lowering(ps.Mul)(_by_kind(_MUL, hlo.multiply))
register_lowering(ps.Sub)(partial(_nary, hlo.subtract))
register_lowering(ps.TrueDiv)(partial(_nary, hlo.divide))


@register_lowering(ps.Neg)
def lower_neg(ctx, node, x):
    x = convert(x, out_dtype(node))
    return hlo.not_(x) if kind(out_dtype(node)) == "b" else hlo.negate(x)


@register_lowering(ps.Abs)
def lower_abs(ctx, node, x):
    if kind(value_dtype(x)) in "ub":  # stablehlo.abs takes no unsigned operand
        return convert(x, out_dtype(node))
    return convert(hlo.abs(x), out_dtype(node))  # complex -> its real magnitude


@register_lowering(ps.Sign)
def lower_sign(ctx, node, x):
    dtype = out_dtype(node)
    x = convert(x, dtype)
    if kind(dtype) == "u":
        return convert(compare(x, full_like(x, 0), "GT"), dtype)
    if kind(dtype) == "b":
        return x
    return hlo.sign(x)


@register_lowering(ps.Sqr)
def lower_sqr(ctx, node, x):
    x = convert(x, out_dtype(node))
    return hlo.multiply(x, x)


@register_lowering(ps.Sqrt)
def lower_sqrt(ctx, node, x):
    return hlo.sqrt(convert(x, out_dtype(node)))


@register_lowering(ps.Reciprocal)
def lower_reciprocal(ctx, node, x):
    x = convert(x, out_dtype(node))
    return hlo.divide(full_like(x, 1), x)


def _zero_divisor_gives_zero(y, q):
    """numpy's integer // and % by zero give 0 (XLA gives all bits set)."""
    zero = full_like(y, 0)
    return select(compare(y, zero, "EQ"), full_like(q, 0), q)


def _int_divmod(x, y):
    """numpy's integer floor division and modulo (the divisor's sign)."""
    q, r = hlo.divide(x, y), hlo.remainder(x, y)  # truncated: the dividend's sign
    if kind(value_dtype(x)) == "i":
        zero = full_like(r, 0)
        fix = hlo.and_(
            compare(r, zero, "NE"),
            compare(compare(r, zero, "LT"), compare(y, zero, "LT"), "NE"),
        )
        q = select(fix, hlo.subtract(q, full_like(q, 1)), q)
        r = select(fix, hlo.add(r, y), r)
    return _zero_divisor_gives_zero(y, q), _zero_divisor_gives_zero(y, r)


def _float_divmod(x, y):
    """numpy's npy_divmod for floats: (floor quotient, modulo with the divisor's sign)."""
    zero = full_like(x, 0)
    mod = hlo.remainder(x, y)  # fmod
    has_mod = compare(mod, zero, "NE")
    fix = hlo.and_(has_mod, compare(compare(y, zero, "LT"), compare(mod, zero, "LT"), "NE"))
    div = hlo.divide(hlo.subtract(x, mod), y)
    mod = select(fix, hlo.add(mod, y), mod)
    div = select(fix, hlo.subtract(div, full_like(div, 1)), div)
    # a zero modulo takes the divisor's sign
    mod = select(has_mod, mod, _copysign(zero, y))
    floordiv = hlo.floor(div)
    floordiv = select(
        compare(hlo.subtract(div, floordiv), full_like(div, 0.5), "GT"),
        hlo.add(floordiv, full_like(div, 1)), floordiv,
    )
    floordiv = select(compare(div, zero, "NE"), floordiv, _copysign(zero, hlo.divide(x, y)))
    # division by zero: numpy returns x / y for the quotient and fmod's NaN for the modulo
    y_zero = compare(y, zero, "EQ")
    return select(y_zero, hlo.divide(x, y), floordiv), mod


def _copysign(magnitude, sign_of):
    negative = compare(sign_of, full_like(sign_of, 0), "LT")
    negative = hlo.or_(negative, _signbit_zero(sign_of))
    mag = hlo.abs(magnitude)
    return select(negative, hlo.negate(mag), mag)


def _signbit_zero(x):
    """True where x is -0.0 (compares equal to 0 but 1/x is -inf)."""
    zero = full_like(x, 0)
    return hlo.and_(compare(x, zero, "EQ"), compare(hlo.divide(full_like(x, 1), x), zero, "LT"))


def _divmod_rule(index: int, name: str):
    def rule(ctx, node, x, y):
        dtype = out_dtype(node)
        if kind(dtype) not in "iuf":
            raise UnsupportedParameterError(node, f"dtype={dtype}", f"numpy has no {name} for it")
        x, y = convert(x, dtype), convert(y, dtype)
        return (_float_divmod if kind(dtype) == "f" else _int_divmod)(x, y)[index]

    return rule


register_lowering(ps.IntDiv)(_divmod_rule(0, "floor_divide"))
register_lowering(ps.Mod)(_divmod_rule(1, "remainder"))


@register_lowering(ps.Pow)
def lower_pow(ctx, node, x, y):
    dtype = out_dtype(node)
    x, y = convert(x, dtype), convert(y, dtype)
    if kind(dtype) == "i":
        raise_if_any(ctx, compare(y, full_like(y, 0), "LT"), ValueError,
                     "Integers to negative integer powers are not allowed.")
    if kind(dtype) == "b":
        raise UnsupportedParameterError(node, "bool operands", "numpy has no bool power")
    return hlo.power(x, y)


def raise_if_any(ctx, mask, error, message):
    """At call time, raise `error(message)` if any element of the boolean `mask` holds."""
    rank = len(static_shape(mask.type))
    (found,) = reduce_region(
        [mask], [ir_constant(np.False_)], range(rank), lambda a, b: [hlo.or_(a[0], b[0])]
    )
    ctx.runtime_check(found, error, message)


@register_lowering(ps.ScalarMaximum, ps.ScalarMinimum)
def lower_max_min(ctx, node, x, y):
    dtype = out_dtype(node)
    if kind(dtype) == "c":
        raise UnsupportedParameterError(node, f"dtype={dtype}", "complex maximum/minimum order")
    x, y = convert(x, dtype), convert(y, dtype)
    if kind(dtype) == "b":
        return (hlo.or_ if isinstance(node.op, ps.ScalarMaximum) else hlo.and_)(x, y)
    # StableHLO's maximum/minimum propagate NaN, as numpy.maximum/minimum do.
    return (hlo.maximum if isinstance(node.op, ps.ScalarMaximum) else hlo.minimum)(x, y)


@register_lowering(ps.Clip)
def lower_clip(ctx, node, x, lo, hi):
    """Clip.impl, which Elemwise.perform runs (Clip has no numpy ufunc): below `lo`
    gives lo, else above `hi` gives hi, else x (so NaN bounds compare false)."""
    dtype = out_dtype(node)
    x, lo, hi = (convert(v, dtype) for v in (x, lo, hi))
    return select(compare(x, lo, "LT"), lo, select(compare(x, hi, "GT"), hi, x))


@register_lowering(MulWithoutZeros)
def lower_mul_without_zeros(ctx, node, x, y):
    dtype = out_dtype(node)
    x, y = convert(x, dtype), convert(y, dtype)
    zero = full_like(x, 0)
    product = _MUL.get(kind(dtype), hlo.multiply)(x, y)
    return select(compare(x, zero, "EQ"), y, select(compare(y, zero, "EQ"), x, product))


# --- selection, identity, casts -------------------------------------------------------


@register_lowering(ps.Switch)
def lower_switch(ctx, node, cond, a, b):
    dtype = out_dtype(node)
    return select(convert(cond, "bool"), convert(a, dtype), convert(b, dtype))


@register_lowering(ps.Second)
def lower_second(ctx, node, x, y):
    return convert(y, out_dtype(node))


@register_lowering(ps.Cast, ps.Identity)
def lower_cast(ctx, node, x):
    return convert(x, out_dtype(node))


# --- comparisons ----------------------------------------------------------------


_DIRECTIONS = {ps.LT: "LT", ps.GT: "GT", ps.LE: "LE", ps.GE: "GE", ps.EQ: "EQ", ps.NEQ: "NE"}


@register_lowering(*_DIRECTIONS)
def lower_comparison(ctx, node, x, y):
    dtype = common_dtype(node)
    direction = next(d for cls, d in _DIRECTIONS.items() if isinstance(node.op, cls))
    if kind(dtype) == "c" and direction not in ("EQ", "NE"):
        raise UnsupportedParameterError(node, f"dtype={dtype}", "complex numbers have no order")
    return convert(compare(convert(x, dtype), convert(y, dtype), direction), out_dtype(node))


@register_lowering(ps.IsNan, ps.IsInf)
def lower_isnan_isinf(ctx, node, x):
    dtype = value_dtype(x)
    if kind(dtype) not in "fc":
        return convert(full_like(x, False, "bool"), out_dtype(node))
    parts = [hlo.real(x), hlo.imag(x)] if kind(dtype) == "c" else [x]
    if isinstance(node.op, ps.IsNan):
        flags = [compare(p, p, "NE") for p in parts]
    else:
        flags = [compare(hlo.abs(p), full_like(p, np.inf), "EQ") for p in parts]
    return convert(reduce(hlo.or_, flags), out_dtype(node))


# --- logic and bits -------------------------------------------------------------------


register_lowering(ps.AND)(partial(_nary, hlo.and_))
register_lowering(ps.OR)(partial(_nary, hlo.or_))
register_lowering(ps.XOR)(partial(_nary, hlo.xor))


@register_lowering(ps.Invert)
def lower_invert(ctx, node, x):
    return hlo.not_(convert(x, out_dtype(node)))  # logical on bool, bitwise on ints


# --- rounding ---------------------------------------------------------------------


def _rounding(builder):
    def rule(ctx, node, x):
        if kind(value_dtype(x)) != "f":
            return convert(x, out_dtype(node))  # integers are already round
        return convert(builder(x), out_dtype(node))

    return rule


def _trunc(x):
    return select(compare(x, full_like(x, 0), "LT"), hlo.ceil(x), hlo.floor(x))


for _op, _builder in {
    ps.Floor: hlo.floor,
    ps.Ceil: hlo.ceil,
    ps.Trunc: _trunc,
    ps.RoundHalfToEven: hlo.round_nearest_even,
    ps.RoundHalfAwayFromZero: hlo.round_nearest_afz,
}.items():
    register_lowering(_op)(_rounding(_builder))


# --- complex --------------------------------------------------------------------------


@register_lowering(ps.Real, ps.Imag)
def lower_real_imag(ctx, node, x):
    if kind(value_dtype(x)) != "c":
        value = x if isinstance(node.op, ps.Real) else full_like(x, 0)
        return convert(value, out_dtype(node))
    return convert((hlo.real if isinstance(node.op, ps.Real) else hlo.imag)(x), out_dtype(node))


@register_lowering(ps.Conj)
def lower_conj(ctx, node, x):
    if kind(value_dtype(x)) != "c":
        return convert(x, out_dtype(node))
    return convert(hlo.complex(hlo.real(x), hlo.negate(hlo.imag(x))), out_dtype(node))


@register_lowering(ps.Angle)
def lower_angle(ctx, node, x):
    # np.angle is no ufunc: PyTensor cannot force its loop, so it computes in the dtype
    # numpy picks for the input (float16 for int8) and casts to the output dtype.
    dtype = np.angle(np.zeros(1, value_dtype(x))).dtype.name
    if kind(value_dtype(x)) == "c":
        re, im = hlo.real(x), hlo.imag(x)
    else:
        re = convert(x, dtype)
        im = full_like(re, 0)
    return convert(hlo.atan2(im, re), out_dtype(node))


def _part_dtype(complex_dtype: str) -> str:
    return {"complex64": "float32", "complex128": "float64"}[complex_dtype]


@register_lowering(ps.Complex)
def lower_complex(ctx, node, re, im):
    part = _part_dtype(out_dtype(node))
    return hlo.complex(convert(re, part), convert(im, part))


@register_lowering(ps.ComplexFromPolar)
def lower_complex_from_polar(ctx, node, r, theta):
    part = _part_dtype(out_dtype(node))
    r, theta = convert(r, part), convert(theta, part)
    raise_if_any(ctx, compare(r, full_like(r, 0), "LT"), ValueError, "polar radius must be non-negative")
    return hlo.complex(hlo.multiply(r, hlo.cosine(theta)), hlo.multiply(r, hlo.sine(theta)))
