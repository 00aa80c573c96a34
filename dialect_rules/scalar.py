"""Scalar Ops (inside Elemwise and Composite), applied to whole tensors of one shape.

Families are tables plus one generic rule each. Every rule returns exactly the dtype
PyTensor's output has, computing the way numpy's ufunc (Elemwise.perform) does.
Transcendental and special functions live in `special.py`.

Where XLA's own op differs from numpy in a corner (integer power past 63, complex
division by -0.0, complex ordering), the rule spells out numpy's C loop instead.

Known differences from Op.perform, by choice:
- Cast of a float out of the target int's range (or NaN, or a negative float to an
  unsigned int) saturates as XLA does; numpy's result there is undefined behaviour
  in C and Op.perform raises OverflowError for inf.
- Integer overflow wraps; Op.perform raises OverflowError for Add/Mul of 3+ inputs
  (it runs the scalar impl on Python ints) and for narrowing Casts.
- RoundHalfAwayFromZero is C's round(), as PyTensor's C code; Op.perform computes
  floor(x + 0.5), which gives 1.0 for 0.49999999999999994 and x + 1 for odd float64
  integers above 2**52.
- Signs of zero: maximum/minimum(-0.0, 0.0) follow XLA (numpy's depends on its SIMD
  path), and XLA folds x + 0.0 to x, so -0.0 + 0.0 is -0.0 (numpy: 0.0).
- Complex pow's product b * log(a) is the plain one: where a NaN meets an infinity
  C's Annex G multiplication recovers an infinity that this leaves NaN
  ((inf + 0.5j) ** (inf + nan j) is inf + nan j in numpy).
- Complex64 pow with a non-integer exponent agrees with numpy to ~1e-5 relative:
  numpy's own cpowf is that far from the exact value.
"""

from __future__ import annotations

from functools import partial, reduce

import numpy as np
import pytensor.scalar as ps
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.tensor.math import MulWithoutZeros

from dialect_rules.special import _exp
from lowering.builders import (
    compare,
    conj,
    convert,
    copysign,
    divide,
    full_like,
    is_inf,
    is_nan,
    mark_compared,
    numpy_order,
    remainder,
    select,
    truncated_divmod,
    value_dtype,
)
from lowering.errors import UnsupportedParameterError
from lowering.regions import any_true
from lowering.registry import register_lowering


def out_dtype(node, i: int = 0) -> str:
    return node.outputs[i].type.dtype


def in_dtype(node, i: int) -> str:
    return node.inputs[i].type.dtype


def kind(dtype) -> str:
    return np.dtype(dtype).kind


def common_dtype(node) -> str:
    """The dtype numpy computes a mixed-dtype comparison or op in."""
    return np.result_type(*[np.dtype(i.type.dtype) for i in node.inputs]).name


def _all(*flags):
    return reduce(hlo.and_, flags)


def _any(*flags):
    return reduce(hlo.or_, flags)


# --- complex numbers as (real, imag) pairs, with numpy's own formulas -----------


def _parts(z):
    return hlo.real(z), hlo.imag(z)


def _pack(parts):
    return hlo.complex(*parts)


def _cmul(a, b):
    """numpy's complex multiply: the plain formula (no C99 Annex G inf recovery)."""
    (ar, ai), (br, bi) = a, b
    return (
        hlo.subtract(hlo.multiply(ar, br), hlo.multiply(ai, bi)),
        hlo.add(hlo.multiply(ar, bi), hlo.multiply(ai, br)),
    )


def _cdiv(a, b):
    """numpy's complex true_divide (Smith's algorithm); x / 0 divides by |0|."""
    (ar, ai), (br, bi) = a, b
    abs_br, abs_bi = hlo.abs(br), hlo.abs(bi)
    one = full_like(br, 1)
    # |br| >= |bi|
    rat = divide(bi, br)
    scl = divide(one, hlo.add(br, hlo.multiply(bi, rat)))
    re1 = hlo.multiply(hlo.add(ar, hlo.multiply(ai, rat)), scl)
    im1 = hlo.multiply(hlo.subtract(ai, hlo.multiply(ar, rat)), scl)
    # |br| < |bi|
    rat = divide(br, bi)
    scl = divide(one, hlo.add(bi, hlo.multiply(br, rat)))
    re2 = hlo.multiply(hlo.add(hlo.multiply(ar, rat), ai), scl)
    im2 = hlo.multiply(hlo.subtract(hlo.multiply(ai, rat), ar), scl)
    # 0 / 0
    zero = full_like(br, 0)
    both_zero = _all(compare(abs_br, zero, "EQ"), compare(abs_bi, zero, "EQ"))
    re0, im0 = divide(ar, abs_br), divide(ai, abs_bi)
    first = compare(abs_br, abs_bi, "GE")
    return (
        select(first, select(both_zero, re0, re1), re2),
        select(first, select(both_zero, im0, im1), im2),
    )


def _creciprocal(z):
    """numpy's complex reciprocal loop, with r / d as r * (1 / d): XLA rewrites a quotient
    of a quotient, (zi / zr) / d, to zi / (zr * d), whose product overflows or vanishes
    for |z| beyond 1e154 or below 1e-154 (so would numpy's r / d, differing by an ulp)."""
    zr, zi = z
    one = full_like(zr, 1)
    r = divide(zi, zr)
    inv = divide(one, hlo.add(zr, hlo.multiply(zi, r)))
    re1, im1 = inv, hlo.negate(hlo.multiply(r, inv))
    r = divide(zr, zi)
    inv = divide(one, hlo.add(hlo.multiply(zr, r), zi))
    re2, im2 = hlo.multiply(r, inv), hlo.negate(inv)
    first = compare(hlo.abs(zi), hlo.abs(zr), "LE")
    return select(first, re1, re2), select(first, im1, im2)


def _cpow(a, b):
    """numpy's npy_cpow: b == 0, a == 0, small integer b by repeated multiplication,
    else exp(b * log(a)) as C's cpow."""
    ar, ai = _parts(a)
    br, bi = _parts(b)
    zero, one = full_like(ar, 0), full_like(ar, 1)
    b_zero = _all(compare(br, zero, "EQ"), compare(bi, zero, "EQ"))
    a_zero = _all(compare(ar, zero, "EQ"), compare(ai, zero, "EQ"))
    # |n| < 100 < 2**7: seven bits of square-and-multiply.
    small_int = _all(
        compare(bi, zero, "EQ"), compare(hlo.floor(br), br, "EQ"),
        compare(hlo.abs(br), full_like(br, 100), "LT"),
    )
    n = convert(select(small_int, hlo.abs(br), zero), "int32")
    aa, p = (one, zero), (ar, ai)
    for k in range(7):
        bit = compare(hlo.and_(n, full_like(n, 1 << k)), full_like(n, 0), "NE")
        aa = tuple(select(bit, new, old) for new, old in zip(_cmul(aa, p), aa))
        p = _cmul(p, p)
    by_loop = _cdiv((one, zero), aa)
    by_loop = _pack(tuple(select(compare(br, zero, "LT"), inv, v) for inv, v in zip(by_loop, aa)))
    # numpy unrolls 1, 2 and 3 so that infinities survive.
    square = _cmul((ar, ai), (ar, ai))
    unrolled = {1: a, 2: _pack(square), 3: _pack(_cmul((ar, ai), square))}
    by_int = by_loop
    for value, z in unrolled.items():
        by_int = select(compare(br, full_like(br, value), "EQ"), z, by_int)
    # exp(b * log(a)), the plain complex product as in C's cpow, and cexp's special values
    log_a = (hlo.log(hlo.abs(a)), hlo.atan2(ai, ar))
    general = _exp(_pack(_cmul((br, bi), log_a)))
    nan = full_like(ar, np.nan)
    of_zero = select(compare(br, zero, "GT"), _pack((zero, zero)), _pack((nan, nan)))
    result = select(small_int, by_int, general)
    result = select(a_zero, of_zero, result)
    return select(b_zero, _pack((one, zero)), result)


# --- arithmetic -------------------------------------------------------------------


def _nary(builder, ctx, node, *xs):
    """Cast every operand to the output dtype, then fold `builder` over them."""
    dtype = out_dtype(node)
    return reduce(builder, [convert(x, dtype) for x in xs])


# numpy's bool arithmetic is logical: True + True is True, True * False is False.
_ADD = {"b": hlo.or_}
_MUL = {"b": hlo.and_}
_DIV = {"c": lambda x, y: _pack(_cdiv(_parts(x), _parts(y)))}


def _by_kind(table, default):
    def rule(ctx, node, *xs):
        return _nary(table.get(kind(out_dtype(node)), default), ctx, node, *xs)

    return rule


register_lowering(ps.Add)(_by_kind(_ADD, hlo.add))
register_lowering(ps.Mul)(_by_kind(_MUL, hlo.multiply))
register_lowering(ps.Sub)(partial(_nary, hlo.subtract))
register_lowering(ps.TrueDiv)(_by_kind(_DIV, divide))


@register_lowering(ps.Neg)
def lower_neg(ctx, node, x):
    x = convert(x, out_dtype(node))
    return hlo.not_(x) if kind(out_dtype(node)) == "b" else hlo.negate(x)


@register_lowering(ps.Abs)
def lower_abs(ctx, node, x):
    if kind(value_dtype(x)) in "ub":  # stablehlo.abs takes no unsigned operand
        return convert(x, out_dtype(node))
    if kind(value_dtype(x)) == "c":  # hypot: an infinite part wins over a NaN one
        re, im = _parts(x)
        infinite = _any(*(is_inf(p) for p in (re, im)))
        return convert(select(infinite, full_like(re, np.inf), hlo.abs(x)), out_dtype(node))
    return convert(hlo.abs(x), out_dtype(node))


@register_lowering(ps.Sign)
def lower_sign(ctx, node, x):
    dtype = out_dtype(node)
    x = convert(x, dtype)
    if kind(dtype) == "u":
        return convert(compare(x, full_like(x, 0), "GT"), dtype)
    if kind(dtype) == "b":
        return x
    if kind(dtype) == "f":  # numpy's sign(-0.0) is +0.0
        return select(compare(x, full_like(x, 0), "EQ"), full_like(x, 0), hlo.sign(x))
    return hlo.sign(x)


@register_lowering(ps.Sqr)
def lower_sqr(ctx, node, x):
    x = convert(x, out_dtype(node))
    return hlo.multiply(x, x)


@register_lowering(ps.Sqrt)
def lower_sqrt(ctx, node, x):
    x = convert(x, out_dtype(node))
    if kind(out_dtype(node)) != "c":
        return hlo.sqrt(x)
    # C's csqrt: the imaginary part keeps the sign of x's (also of -0.0: the branch
    # cut), and an infinite imaginary part gives inf + that infinity even with NaN;
    # sqrt(+inf + iNaN) = inf + iNaN and sqrt(-inf + iNaN) = NaN + i inf.
    (zr, zi), (re, im) = _parts(x), _parts(hlo.sqrt(x))
    im = copysign(im, zi)
    inf = full_like(re, np.inf)
    nan_imag = hlo.and_(is_nan(zi), is_inf(zr))
    positive = compare(zr, full_like(zr, 0), "GT")
    re = select(nan_imag, select(positive, inf, zi), re)
    im = select(nan_imag, select(positive, zi, inf), im)
    infinite = is_inf(zi)
    return _pack((select(infinite, inf, re), select(infinite, zi, im)))


@register_lowering(ps.Reciprocal)
def lower_reciprocal(ctx, node, x):
    x = convert(x, out_dtype(node))
    if kind(out_dtype(node)) == "c":
        return _pack(_creciprocal(_parts(x)))
    return divide(full_like(x, 1), x)


def int_divmod(x, y):
    """numpy's integer floor division and modulo (the divisor's sign); both 0 where the
    divisor is 0 (XLA gives all bits set)."""
    zeros, q, r = truncated_divmod(x, y)  # truncated: the dividend's sign
    if kind(value_dtype(x)) == "i":
        zero = full_like(r, 0)
        fix = hlo.and_(
            compare(r, zero, "NE"),
            compare(compare(r, zero, "LT"), compare(y, zero, "LT"), "NE"),
        )
        q = select(fix, hlo.subtract(q, full_like(q, 1)), q)
        r = select(fix, hlo.add(r, y), r)
    if zeros is None:
        return q, r
    return select(zeros, full_like(q, 0), q), select(zeros, full_like(r, 0), r)


def _float_divmod(x, y):
    """numpy's npy_divmod for floats: (floor quotient, modulo with the divisor's sign)."""
    zero = full_like(x, 0)
    mod = remainder(x, y)  # fmod
    has_mod = compare(mod, zero, "NE")
    fix = hlo.and_(has_mod, compare(compare(y, zero, "LT"), compare(mod, zero, "LT"), "NE"))
    div = divide(hlo.subtract(x, mod), y)
    mod = select(fix, hlo.add(mod, y), mod)
    div = select(fix, hlo.subtract(div, full_like(div, 1)), div)
    # a zero modulo takes the divisor's sign
    mod = select(has_mod, mod, copysign(zero, y))
    floordiv = hlo.floor(div)
    floordiv = select(
        compare(hlo.subtract(div, floordiv), full_like(div, 0.5), "GT"),
        hlo.add(floordiv, full_like(div, 1)), floordiv,
    )
    floordiv = select(compare(div, zero, "NE"), floordiv, copysign(zero, divide(x, y)))
    # division by zero: numpy returns x / y for the quotient and fmod's NaN for the modulo
    y_zero = compare(y, zero, "EQ")
    return select(y_zero, divide(x, y), floordiv), mod


def _divmod_rule(index: int, name: str):
    def rule(ctx, node, x, y):
        dtype = out_dtype(node)
        if kind(dtype) not in "iufb":
            raise UnsupportedParameterError(node, f"dtype={dtype}", f"numpy has no {name} for it")
        # numpy has no bool loop: bools divide as int8 and the result is cast back;
        # its float16 loop runs npy_divmod in float32.
        work = {"bool": "int8", "float16": "float32"}.get(dtype, dtype)
        x, y = convert(x, work), convert(y, work)
        return convert((_float_divmod if kind(work) == "f" else int_divmod)(x, y)[index], dtype)

    return rule


register_lowering(ps.IntDiv)(_divmod_rule(0, "floor_divide"))
register_lowering(ps.Mod)(_divmod_rule(1, "remainder"))


def _int_pow(x, y, bits: int):
    """x ** y by square-and-multiply over `bits` exponent bits, wrapping as numpy's
    loop does (stablehlo.power looks at only 6 exponent bits)."""
    one, zero = full_like(y, 1), full_like(y, 0)
    acc = full_like(x, 1)
    for i in range(bits):
        bit = compare(hlo.and_(y, one), zero, "NE")
        acc = select(bit, hlo.multiply(acc, x), acc)
        if i + 1 < bits:
            x = hlo.multiply(x, x)
            y = hlo.shift_right_logical(y, one)
    return acc


def _exponent_bits(dtype) -> int:
    """Bits an exponent of `dtype` can set; a signed one is never negative here."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return 1
    return dtype.itemsize * 8 - (dtype.kind == "i")


@register_lowering(ps.Pow)
def lower_pow(ctx, node, x, y):
    dtype = out_dtype(node)
    # numpy's bool ** bool runs its int8 loop.
    work = "int8" if kind(dtype) == "b" else dtype
    x, y = convert(x, work), convert(y, work)
    if kind(work) == "i" and kind(in_dtype(node, 1)) == "i" and not _known_non_negative(node.inputs[1]):
        raise_if_any(ctx, compare(y, full_like(y, 0), "LT"), ValueError,
                     "Integers to negative integer powers are not allowed.")
    if kind(work) in "iu":
        bits = min(_exponent_bits(in_dtype(node, 1)), np.dtype(work).itemsize * 8)
        return convert(_int_pow(x, y, bits), dtype)
    if kind(work) == "c":
        return _cpow(x, y)
    return hlo.power(x, y)


def _known_non_negative(variable) -> bool:
    """A constant exponent >= 0 (inner graphs of Composite and ScalarLoop keep their
    constants; a check there may be inside a loop body, where nothing can raise)."""
    data = getattr(variable, "data", None)
    return data is not None and bool(np.all(np.asarray(data) >= 0))


def raise_if_any(ctx, mask, error, message):
    """At call time, raise `error(message)` if any element of the boolean `mask` holds."""
    ctx.runtime_check(any_true(mask), error, message)


@register_lowering(ps.ScalarMaximum, ps.ScalarMinimum)
def lower_max_min(ctx, node, x, y):
    dtype = out_dtype(node)
    is_max = isinstance(node.op, ps.ScalarMaximum)
    x, y = convert(x, dtype), convert(y, dtype)
    if kind(dtype) == "b":
        return (hlo.or_ if is_max else hlo.and_)(x, y)
    if kind(dtype) == "c":
        # numpy keeps x where x has a NaN part or x >= y (x <= y), else takes y.
        xr, xi = _parts(x)
        keep = _any(is_nan(xr), is_nan(xi), numpy_order(x, y, "GE" if is_max else "LE"))
        return select(keep, x, y)
    # StableHLO's maximum/minimum propagate NaN, as numpy.maximum/minimum do.
    return (hlo.maximum if is_max else hlo.minimum)(x, y)


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
_SWAPPED = {"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE", "EQ": "EQ", "NE": "NE"}


def _signed_vs_uint64(s, u, direction):
    """numpy's exact int64-vs-uint64 loops ('qQ->?'): a negative s is below every u,
    otherwise both compare as uint64 (float64, their result_type, would round)."""
    below = compare(s, full_like(s, 0), "LT")
    return select(
        below,
        full_like(below, direction in ("LT", "LE", "NE"), "bool"),
        compare(convert(s, "uint64"), u, direction),
    )


@register_lowering(*_DIRECTIONS)
def lower_comparison(ctx, node, x, y):
    direction = next(d for cls, d in _DIRECTIONS.items() if isinstance(node.op, cls))
    kinds = kind(in_dtype(node, 0)) + kind(in_dtype(node, 1))
    if "u" in kinds and "i" in kinds and "uint64" in (in_dtype(node, 0), in_dtype(node, 1)):
        if kinds == "iu":
            flags = _signed_vs_uint64(convert(x, "int64"), y, direction)
        else:
            flags = _signed_vs_uint64(convert(y, "int64"), x, _SWAPPED[direction])
        return convert(flags, out_dtype(node))
    dtype = common_dtype(node)
    x, y = convert(x, dtype), convert(y, dtype)
    # Each operand one number per element, for every comparison and reader of it.
    return convert(mark_compared(numpy_order(x, y, direction)), out_dtype(node))


@register_lowering(ps.IsNan, ps.IsInf)
def lower_isnan_isinf(ctx, node, x):
    dtype = value_dtype(x)
    if kind(dtype) not in "fc":
        return convert(full_like(x, False, "bool"), out_dtype(node))
    parts = _parts(x) if kind(dtype) == "c" else [x]
    if isinstance(node.op, ps.IsNan):
        flags = [is_nan(p) for p in parts]
    else:
        flags = [is_inf(p) for p in parts]
    return convert(_any(*flags), out_dtype(node))


# --- logic and bits -------------------------------------------------------------------


def _bitwise(builder):
    def rule(ctx, node, *xs):
        dtype = out_dtype(node)
        if kind(dtype) not in "iub":  # int64 with uint64: numpy has no loop either
            raise UnsupportedParameterError(node, f"dtype={dtype}", "numpy has no bitwise loop for it")
        return _nary(builder, ctx, node, *xs)

    return rule


register_lowering(ps.AND)(_bitwise(hlo.and_))
register_lowering(ps.OR)(_bitwise(hlo.or_))
register_lowering(ps.XOR)(_bitwise(hlo.xor))


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
    return convert(conj(x), out_dtype(node))


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
    # ComplexFromPolar.impl runs on Python scalars: cos/sin of a bool are numpy's
    # float16, of anything else float64; the complex128 is then cast to the output.
    raise_if_any(ctx, compare(r, full_like(r, 0), "LT"), ValueError, "polar radius must be non-negative")
    work = "float16" if in_dtype(node, 1) == "bool" else "float64"
    r, theta = convert(r, work), convert(theta, work)
    part = _part_dtype(out_dtype(node))
    re, im = hlo.multiply(r, hlo.cosine(theta)), hlo.multiply(r, hlo.sine(theta))
    return hlo.complex(convert(re, part), convert(im, part))
