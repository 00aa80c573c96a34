"""Builders shared by every rule: constants, casts and the shape helpers.

A dimension (`Dim`) is a Python `int` when static, or a 0-d `i64` tensor `Value`
when only known at run time. Only the helpers here branch on that: they emit the
static StableHLO op when every dim is an int and the dynamic op otherwise.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Sequence, Union

import functools
import math

import numpy as np

from jax.extend.mlir import ir
from jax.extend.mlir.dialects import stablehlo as hlo

from lowering.types import dtype_of, element_type, static_shape, tensor_type

Dim = Union[int, ir.Value]
I64 = "int64"


# --- constants ------------------------------------------------------------


def dense_attr(value, dtype=None, shape=None) -> ir.DenseElementsAttr:
    arr = np.asarray(value, dtype=dtype)
    shape = arr.shape if shape is None else tuple(shape)
    if arr.size > 1 and _is_uniform(arr):
        arr = arr.reshape(-1)[:1]  # splat: one element, the shape carries the rest
    arr = np.ascontiguousarray(arr)
    if arr.dtype == np.bool_:
        arr = arr.astype(np.bool_)
    return ir.DenseElementsAttr.get(arr, type=element_type(arr.dtype), shape=shape)


def _is_uniform(arr: np.ndarray) -> bool:
    flat = np.ascontiguousarray(arr).reshape(-1)
    if arr.dtype.kind in "fc":
        # NaN != NaN, and 0.0 == -0.0 must not merge: compare the bytes.
        rows = flat.view(np.uint8).reshape(arr.size, -1)
        return bool((rows == rows[0]).all())
    return bool((flat == flat[0]).all())


def ir_constant(value, dtype=None) -> ir.Value:
    """A `stablehlo.constant` of a numpy value (a splat when all elements agree)."""
    return hlo.constant(dense_attr(value, dtype))


def constant_array(value: ir.Value, kinds: str = "iuf"):
    """A numpy array for a value defined by a `stablehlo.constant` of one of the numpy
    dtype `kinds` (integer or float unless told)."""
    owner = value.owner
    if not isinstance(owner, (ir.Operation, ir.OpView)):
        return None  # a block argument
    owner = owner.operation
    if owner.name != "stablehlo.constant":
        return None
    try:
        dtype = np.dtype(dtype_of(value.type))
    except KeyError:
        return None
    if dtype.kind not in kinds:
        return None
    attr = ir.DenseElementsAttr(owner.attributes["value"])
    shape = tuple(ir.RankedTensorType(value.type).shape)
    if attr.is_splat:
        return np.full(shape, np.asarray(attr.get_splat_value().value, dtype=dtype))
    return np.asarray(attr).astype(dtype).reshape(shape)


def full(value, dims: Sequence[Dim], dtype) -> ir.Value:
    """A tensor of shape `dims` filled with `value`."""
    if all(isinstance(d, int) for d in dims):
        return hlo.constant(dense_attr(np.asarray(value, dtype=dtype).reshape(1), dtype, dims))
    return broadcast_in_dim(ir_constant(value, dtype), dims, ())


def full_like(x: ir.Value, value, dtype=None) -> ir.Value:
    return full(value, shape_of(x), dtype or dtype_of(x.type))


# --- functions -------------------------------------------------------------------


def symbol_name(fn) -> str:
    """The symbol of a `func.func`."""
    return ir.StringAttr(fn.attributes["sym_name"]).value


def function_type(fn) -> ir.FunctionType:
    return ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)


# --- element types ------------------------------------------------------------


def value_dtype(x: ir.Value) -> str:
    return dtype_of(x.type)


def convert(x: ir.Value, dtype) -> ir.Value:
    """Cast `x` to `dtype` with numpy's `astype` semantics."""
    dtype = np.dtype(dtype)
    src = np.dtype(value_dtype(x))
    if src == dtype:
        return x
    if dtype == np.bool_:
        return hlo.compare(x, full_like(x, 0), _direction("NE"), compare_type=_compare_type(src))
    if src == np.bool_ and dtype.kind in "fc":
        # XLA rewrites multiply(convert(pred), x) into select(pred, x, 0), so
        # False * inf would give 0 instead of numpy's nan; a select keeps IEEE.
        return hlo.select(x, full_like(x, 1, dtype), full_like(x, 0, dtype))
    if src.kind == "c" and dtype.kind != "c":
        x = hlo.real(x)  # numpy drops the imaginary part
        src = np.dtype(value_dtype(x))
        if src == dtype:
            return x
    return hlo.convert(with_dtype(x.type, dtype), x)


# --- division ---------------------------------------------------------------------
# Every stablehlo.divide and stablehlo.remainder is emitted here. MLIR's folders
# (stablehlo-refine-shapes, which the runtime runs on the arguments' values) evaluate an
# integer division of constants with APInt, which divides by zero in hardware: the process
# dies of SIGFPE (openxla/stablehlo#2971). An integer divisor not known to be nonzero is
# replaced by 1 where it is 0, and the result by what XLA gives there (x / 0 = -1, all
# bits set; x % 0 = x), so no fold ever sees a zero divisor and nothing else changes.


def divide(x: ir.Value, y: ir.Value) -> ir.Value:
    """x / y (integers: truncated), with XLA's x / 0 and no division by zero to fold."""
    zeros, y = _guarded_divisor(y)
    q = hlo.divide(x, y)
    if zeros is None:
        return q
    dtype = np.dtype(value_dtype(x))
    return hlo.select(zeros, full_like(x, -1 if dtype.kind == "i" else np.iinfo(dtype).max), q)


def remainder(x: ir.Value, y: ir.Value) -> ir.Value:
    """x % y with the dividend's sign (C's fmod), with XLA's x % 0 = x and no division by
    zero to fold."""
    zeros, y = _guarded_divisor(y)
    r = hlo.remainder(x, y)
    return r if zeros is None else hlo.select(zeros, x, r)


def truncated_divmod(x: ir.Value, y: ir.Value) -> tuple[ir.Value | None, ir.Value, ir.Value]:
    """(where y is 0, x / y, x % y) for a rule that defines its own result where the
    divisor is 0 (the mask is None where it cannot be); there q and r are x / 1, x % 1."""
    zeros, y = _guarded_divisor(y)
    return zeros, hlo.divide(x, y), hlo.remainder(x, y)


def _guarded_divisor(y: ir.Value) -> tuple[ir.Value | None, ir.Value]:
    """(y == 0, y with 1 for 0) for an integer divisor that may be 0, else (None, y)."""
    if np.dtype(value_dtype(y)).kind not in "iu":
        return None, y
    known = constant_array(y, "iu")
    if known is not None and known.all():
        return None, y
    zeros = compare(y, full_like(y, 0), "EQ")
    return zeros, hlo.select(zeros, full_like(y, 1), y)


def with_dtype(t: ir.Type, dtype) -> ir.RankedTensorType:
    rt = ir.RankedTensorType(t)
    return ir.RankedTensorType.get(list(rt.shape), element_type(dtype))


def _direction(name: str):
    return hlo.ComparisonDirectionAttr.get(name)


def _compare_type(dtype) -> ir.Attribute:
    kind = np.dtype(dtype).kind
    name = {"f": "FLOAT", "c": "FLOAT", "i": "SIGNED", "u": "UNSIGNED", "b": "UNSIGNED"}[kind]
    return hlo.ComparisonTypeAttr.get(name)


def compare(a: ir.Value, b: ir.Value, direction: str) -> ir.Value:
    """`stablehlo.compare` with the comparison type taken from the operands' dtype."""
    return hlo.compare(a, b, _direction(direction), compare_type=_compare_type(value_dtype(a)))


# The attribute by which a comparison asks `passes.compute_compared_once` for its operands.
COMPARED = "pytensor.compared"
# Ops that give their operand's numbers again, exactly.
EXACT_OPS = frozenset(
    f"stablehlo.{name}" for name in ("broadcast_in_dim", "reshape", "convert", "negate", "transpose")
)


def mark_compared(flags: ir.Value) -> ir.Value:
    """`flags`, a `stablehlo.compare` marked for `passes.compute_compared_once` where an
    operand is a `compared_sum` (a graph's comparison, not a rule's own)."""
    owner = flags.owner
    if isinstance(owner, (ir.Operation, ir.OpView)) and owner.operation.name == "stablehlo.compare":
        if any(compared_sum(v) is not None for v in owner.operation.operands):
            owner.operation.attributes[COMPARED] = ir.UnitAttr.get()
    return flags


def compared_sum(value: ir.Value):
    """The float add or subtract of rank 1 or more whose numbers `value` holds, through
    broadcasts, reshapes, transposes, converts and negations; else None."""
    while True:
        owner = value.owner
        if not isinstance(owner, (ir.Operation, ir.OpView)):
            return None  # a block argument: one number already
        owner = owner.operation
        if owner.name not in EXACT_OPS:
            break
        value = owner.operands[0]
    if owner.name not in ("stablehlo.add", "stablehlo.subtract"):
        return None
    t = ir.RankedTensorType(value.type)
    return owner if t.rank and isinstance(t.element_type, ir.FloatType) else None


def numpy_order(a: ir.Value, b: ir.Value, direction: str) -> ir.Value:
    """`compare` in numpy's order: for complex operands its lexicographic one (its CLT,
    CLE, CGT, CGE loops), real parts first, imaginary parts where those are equal;
    a NaN imaginary part makes the order false. `compare` otherwise."""
    if not is_complex(a) or direction in ("EQ", "NE"):
        return compare(a, b, direction)
    ar, ai, br, bi = hlo.real(a), hlo.imag(a), hlo.real(b), hlo.imag(b)
    strict = {"LT": "LT", "LE": "LT", "GT": "GT", "GE": "GT"}[direction]
    no_nan_imag = hlo.not_(hlo.or_(is_nan(ai), is_nan(bi)))
    by_real = hlo.and_(compare(ar, br, strict), no_nan_imag)
    by_imag = hlo.and_(compare(ar, br, "EQ"), compare(ai, bi, direction))
    return hlo.or_(by_real, by_imag)


def is_nan(x: ir.Value) -> ir.Value:
    return compare(x, x, "NE")


def is_inf(x: ir.Value) -> ir.Value:
    return compare(hlo.abs(x), full_like(x, np.inf), "EQ")


def is_complex(x: ir.Value) -> bool:
    return np.dtype(value_dtype(x)).kind == "c"


def conj(x: ir.Value) -> ir.Value:
    """The complex conjugate (x itself when real)."""
    return hlo.complex(hlo.real(x), hlo.negate(hlo.imag(x))) if is_complex(x) else x


def signbit(x: ir.Value) -> ir.Value:
    """numpy's signbit: the float's sign bit, so -0.0 (and -nan) count as negative."""
    bits = hlo.bitcast_convert(with_dtype(x.type, f"int{np.dtype(value_dtype(x)).itemsize * 8}"), x)
    return compare(bits, full_like(bits, 0), "LT")


def hypot(x: ir.Value, y: ir.Value) -> ir.Value:
    """sqrt(x^2 + y^2) of float32/float64 values, with no overflow or underflow in the
    squares (XLA's complex abs scales)."""
    return hlo.abs(hlo.complex(x, y))


def nearest_integer_and_offset(x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """x's nearest integer n (ties to even) and x - n, which is exact and in [-1/2, 1/2]:
    the argument reduction of functions of period 1 or 2 in x (sin(pi x), cot(pi x))."""
    n = hlo.round_nearest_even(x)
    return n, hlo.subtract(x, n)


# sin(pi g) / g and cos(pi g) as series in g**2 for |g| <= 1/4, where their next terms,
# (pi/4)**19 / 19! and (pi/4)**20 / 20!, are below 1e-19.
_SIN_PI = tuple((-1) ** k * math.pi ** (2 * k + 1) / math.factorial(2 * k + 1) for k in range(9))
_COS_PI = tuple((-1) ** k * math.pi ** (2 * k) / math.factorial(2 * k) for k in range(10))


def sin_cos_pi_of_offset(f: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(sin(pi f), cos(pi f)) for |f| <= 1/2 (the offset of `nearest_integer_and_offset`),
    within an ulp. Polynomials, because XLA's CPU sine and cosine are a libm call per
    element (18 ns a float64 element, these 1 ns); beyond |f| = 1/4 through
    1/2 - |f|, which is exact."""
    magnitude = hlo.abs(f)
    far = compare(magnitude, full_like(f, 0.25), "GT")
    g = select(far, hlo.subtract(full_like(f, 0.5), magnitude), magnitude)
    g2 = hlo.multiply(g, g)
    sin_g, cos_g = hlo.multiply(g, polynomial(g2, _SIN_PI)), polynomial(g2, _COS_PI)
    return copysign(select(far, cos_g, sin_g), f), select(far, sin_g, cos_g)


def sinpi(x: ir.Value) -> ir.Value:
    """sin(pi x), with x reduced to [-1/2, 1/2] exactly first: exactly zero at the
    integers, and no rounding of pi x (which at x = -1.6e8 is 4e-8 off)."""
    n, offset = nearest_integer_and_offset(x)
    s, _ = sin_cos_pi_of_offset(offset)
    odd = compare(remainder(n, full_like(x, 2.0)), full_like(x, 0.0), "NE")
    return select(odd, hlo.negate(s), s)


# Cephes' log: log(1 + z) = z - z**2/2 + z**3 P(z)/Q(z) for z in [sqrt(1/2) - 1, sqrt(2) - 1]
# (lowest power first), and ln 2 in two parts, the first exact in products with e.
_LOG_P = (7.70838733755885391666e0, 1.79368678507819816313e1, 1.44989225341610930846e1,
          4.70579119878881725854e0, 4.97494994976747001425e-1, 1.01875663804580931796e-4)
_LOG_Q = (2.31251620126765340583e1, 7.11544750618563894466e1, 8.29875266912776603211e1,
          4.52279145837532221105e1, 1.12873587189167450590e1, 1.0)
_LN2_HIGH, _LN2_LOW = 0.693359375, -2.121944400546905827679e-4
_SQRT_HALF = math.sqrt(0.5)


def _log_of_parts(e: ir.Value, z: ir.Value) -> ir.Value:
    """log(2**e (1 + z)) for z in [sqrt(1/2) - 1, sqrt(2) - 1]."""
    z2 = hlo.multiply(z, z)
    tail = divide(hlo.multiply(hlo.multiply(z, z2), polynomial(z, _LOG_P)), polynomial(z, _LOG_Q))
    tail = hlo.subtract(hlo.add(tail, hlo.multiply(e, full_like(e, _LN2_LOW))), hlo.multiply(z2, full_like(z, 0.5)))
    return hlo.add(hlo.add(z, tail), hlo.multiply(e, full_like(e, _LN2_HIGH)))


def exponent_and_fraction(x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(e, z) with x = 2**e (1 + z), z in [sqrt(1/2) - 1, sqrt(2) - 1] (exact), for a
    positive normal float64 x: read from its bits."""
    bits = hlo.bitcast_convert(with_dtype(x.type, "int64"), x)
    e = hlo.subtract(hlo.shift_right_arithmetic(bits, full_like(bits, 52)), full_like(bits, 1022))
    half_to_one = hlo.or_(hlo.and_(bits, full_like(bits, (1 << 52) - 1)), full_like(bits, 0x3FE << 52))
    m = hlo.bitcast_convert(x.type, half_to_one)  # in [1/2, 1)
    low = compare(m, full_like(m, _SQRT_HALF), "LT")
    e = convert(select(low, hlo.subtract(e, full_like(e, 1)), e), "float64")
    return e, hlo.subtract(select(low, hlo.add(m, m), m), full_like(m, 1.0))


def veltkamp_split(x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(high, low) with x = high + low, high of 26 significant bits (float64), so that the
    products of two highs are exact (Veltkamp)."""
    c = hlo.multiply(x, full_like(x, 2.0**27 + 1))
    high = hlo.subtract(c, hlo.subtract(c, x))
    return high, hlo.subtract(x, high)


def two_product(a: ir.Value, b: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(p, e) with p + e = a b exactly and p = a b rounded (Dekker). A multiply-add that
    XLA contracts into an FMA computes its part exactly all the same."""
    p = hlo.multiply(a, b)
    (a1, a2), (b1, b2) = veltkamp_split(a), veltkamp_split(b)
    e = add_all(hlo.subtract(hlo.multiply(a1, b1), p), hlo.multiply(a1, b2), hlo.multiply(a2, b1))
    return p, hlo.add(e, hlo.multiply(a2, b2))


def fast_two_sum(a: ir.Value, b: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(s, e) with s + e = a + b exactly and s = a + b rounded, for |a| >= |b| (Dekker).
    Neither may be a constant: XLA folds (c + b) - c into b."""
    s = hlo.add(a, b)
    return s, hlo.subtract(b, hlo.subtract(s, a))


def _log_at_edges(x: ir.Value) -> ir.Value:
    """log(x) at 0 (-inf), +inf (+inf), below 0 and NaN (NaN)."""
    edge = select(compare(x, full_like(x, 0.0), "GE"), full_like(x, -np.inf), full_like(x, np.nan))
    return select(compare(x, full_like(x, np.inf), "EQ"), x, edge)


def _ordinary(x: ir.Value) -> ir.Value:
    """x is a positive normal float below +inf (false at NaN)."""
    return hlo.and_(compare(x, full_like(x, np.finfo(np.float64).tiny), "GE"), compare(x, full_like(x, np.inf), "LT"))


def polynomial_log(x: ir.Value) -> ir.Value:
    """log(x) within an ulp (0.84), in arithmetic XLA vectorizes: its own float64 log is a
    libm call per element (3.3 ns an element against 1.1). For the special functions'
    inner logs and the exponential sampler's. `Log` itself keeps XLA's, within 0.51
    ulps: with this one the zero-inflated Poisson's logp and gradient went from 52.9 to
    65.1 µs a call, where XLA fused a 2-element log through a broadcast and ran the
    polynomial per element (benchmarks/README, "Special functions in PyMC models").
    Other dtypes: XLA's log."""
    if value_dtype(x) != "float64":
        return hlo.log(x)
    # a subnormal x scaled into the normal range (XLA's CPU flushes it to 0: -inf there)
    subnormal = compare(x, full_like(x, np.finfo(np.float64).tiny), "LT")
    scaled = select(subnormal, hlo.multiply(x, full_like(x, 2.0**54)), x)
    ordinary = _ordinary(scaled)
    e, z = exponent_and_fraction(select(ordinary, scaled, full_like(x, 1.0)))
    e = select(subnormal, hlo.subtract(e, full_like(e, 54.0)), e)
    return select(ordinary, _log_of_parts(e, z), _log_at_edges(scaled))


def polynomial_log1p(s: ir.Value) -> ir.Value:
    """log(1 + s) as `polynomial_log`, within 2.5 ulps: the series' z is s itself where
    1 + s is within [sqrt(1/2), sqrt(2)); elsewhere, log(u) of u = 1 + s plus
    (s - (u - 1)) / u, what the rounding of u lost."""
    if value_dtype(s) != "float64":
        return hlo.log_plus_one(s)
    zero, one = full_like(s, 0.0), full_like(s, 1.0)
    u = hlo.add(one, s)
    near = hlo.and_(compare(u, full_like(s, _SQRT_HALF), "GE"), compare(u, full_like(s, math.sqrt(2.0)), "LT"))
    ordinary = _ordinary(u)
    e, z = exponent_and_fraction(select(ordinary, u, one))
    lost = select(near, zero, divide(hlo.subtract(s, hlo.subtract(u, one)), u))
    value = hlo.add(_log_of_parts(select(near, zero, e), select(near, s, z)), lost)
    value = select(compare(s, zero, "EQ"), s, value)  # log1p(-0.0) is -0.0
    return select(ordinary, value, _log_at_edges(u))


# Giles (2010), "Approximating the erfinv function": float64 polynomials in w - 3.125 (w =
# -log(1 - x^2) below 6.25), in sqrt(w) - 3.25 (below 16) and in sqrt(w) - 5, from the
# constant term up.
_ERF_INV_CENTRAL = (
    1.6536545626831027356, 0.24015818242558961693, -0.0060336708714301490533,
    -0.00074070253416626697512, 0.0001867342080340571352, -1.3882523362786468719e-05,
    -1.3654692000834678645e-06, 4.2347877827932403518e-07, -2.9070369957882005086e-08,
    -4.1126339803469836976e-09, 1.051212273321532285e-09, -5.4154120542946279317e-11,
    -1.2975133253453532498e-11, 2.6335093153082322977e-12, -8.1519341976054721522e-14,
    -4.0545662729752068639e-14, 6.6376381343583238325e-15, 2.0972767875968561637e-17,
    -1.333171662854620906e-16, 1.115787767802518096e-17, 1.2858480715256400167e-18,
    -1.685059138182016589e-19, -3.6444120640178196996e-21,
)
_ERF_INV_MIDDLE = (
    3.0838856104922207635, 1.0052589676941592334, 0.005370914553590063617,
    -0.0037512085075692412107, 0.0024914420961078508066, -0.0016882755560235047313,
    0.00095328937973738049703, -0.0003550375203628474796, 2.4031110387097893999e-05,
    6.8284851459573175448e-05, -4.7318229009055733981e-05, 1.2475304481671778723e-05,
    2.9234449089955446044e-06, -4.013867526981545969e-06, 1.5027403968909827627e-06,
    1.8239629214389227755e-08, -2.7517406297064545428e-07, 9.0756561938885390979e-08,
    2.2137376921775787049e-09,
)
_ERF_INV_TAIL = (
    4.8499064014085844221, 1.0103004648645343977, -0.00013871931833623122026,
    -0.00021503011930044477347, 7.5995277030017761139e-05, -1.9681778105531670567e-05,
    4.5260625972231537039e-06, -9.9298272942317002539e-07, 2.2900482228026654717e-07,
    -6.7711997758452339498e-08, 2.9147953450901080826e-08, -1.4960026627149240478e-08,
    7.6157012080783393804e-09, -3.7894654401267369937e-09, 1.5076572693500548083e-09,
    -2.5556418169965252055e-10, -2.7109920616438573243e-11,
)


def polynomial_erf_inv(x: ir.Value) -> ir.Value:
    """erfinv(x) of float64 x in (-1, 1), within 3 ulps: Giles's polynomials, the log
    `polynomial_log`'s (NaN outside [-1, 1]; +-1 is the caller's). XLA's chlo.erf_inv is
    off by up to 1.1e-10 relative near |x| = 1, and its log is a libm call per element."""
    one = full_like(x, 1.0)
    w = hlo.negate(polynomial_log(hlo.multiply(hlo.subtract(one, x), hlo.add(one, x))))
    root = hlo.sqrt(w)
    central = polynomial(hlo.subtract(w, full_like(w, 3.125)), _ERF_INV_CENTRAL)
    middle = polynomial(hlo.subtract(root, full_like(w, 3.25)), _ERF_INV_MIDDLE)
    tail = polynomial(hlo.subtract(root, full_like(w, 5.0)), _ERF_INV_TAIL)
    p = select(compare(w, full_like(w, 6.25), "LT"), central, select(compare(w, full_like(w, 16.0), "LT"), middle, tail))
    return hlo.multiply(p, x)


def copysign(magnitude: ir.Value, sign_of: ir.Value) -> ir.Value:
    mag = hlo.abs(magnitude)
    return select(signbit(sign_of), hlo.negate(mag), mag)


# Cephes' atan: atan(t) = t + t z P(z) / Q(z), z = t**2, for |t| up to 0.66; past it,
# pi/4 + atan((x - 1) / (x + 1)), and past tan(3 pi/8), pi/2 + atan(-1 / x), with pi/4's
# and pi/2's rounding errors added back (Cephes' MOREBITS). Lowest power first.
_ATAN_P = (-6.485021904942025371773e1, -1.228866684490136173410e2, -7.500855792314704667340e1,
           -1.615753718733365076637e1, -8.750608600031904122785e-1)
_ATAN_Q = (1.945506571482613964425e2, 4.853903996359136964868e2, 4.328810604912902668951e2,
           1.650270098316988542046e2, 2.485846490142306297962e1, 1.0)
_TAN_3PI_8 = 2.414213562373095
_PI_2_LOST = 6.123233995736765886130e-17  # pi/2 - fl(pi/2)


def polynomial_atan(x: ir.Value) -> ir.Value:
    """atan(x) of real x: float64 within an ulp of numpy's (Cephes: 1.9e-16 relative at
    most); other float dtypes computed in float64 and rounded once. Not XLA's: jaxlib
    0.10.2 rewrites atan2(x, 1), which chlo.atan is, into a vectorized atan that gave wrong
    numbers for vectors of 50 or more elements (not 100,001 or 100,003: 100,004), and
    crashed the process, once XLA used 512-bit vectors (`compile._VECTOR_OVERRIDES`;
    reported at the default width on other hosts: jax-ml/jax#39352). `passes.atan2_of_one`
    routes every such atan2 here."""
    dtype = value_dtype(x)
    if dtype != "float64":
        return convert(polynomial_atan(convert(x, "float64")), dtype)
    a, one = hlo.abs(x), full_like(x, 1.0)
    big = compare(a, full_like(a, _TAN_3PI_8), "GT")
    middle = compare(a, full_like(a, 0.66), "GT")
    t = select(big, divide(full_like(a, -1.0), a), select(middle, divide(hlo.subtract(a, one), hlo.add(a, one)), a))
    z = hlo.multiply(t, t)
    value = hlo.add(hlo.multiply(t, hlo.multiply(z, divide(polynomial(z, _ATAN_P), polynomial(z, _ATAN_Q)))), t)
    lost = select(big, full_like(a, _PI_2_LOST), select(middle, full_like(a, _PI_2_LOST / 2), full_like(a, 0.0)))
    base = select(big, full_like(a, math.pi / 2), select(middle, full_like(a, math.pi / 4), full_like(a, 0.0)))
    return copysign(hlo.add(base, hlo.add(value, lost)), x)


# --- shapes -------------------------------------------------------------------


def is_static(dims: Sequence[Dim]) -> bool:
    return all(isinstance(d, int) for d in dims)


def dim_size(x: ir.Value, axis: int) -> Dim:
    """Size of `x` along `axis`: an int if static, else a 0-d i64 value.

    A dynamic dim is traced back to the i64 shape operand that made it where the
    IR says so (`get_dimension_size` is 32-bit and would wrap dims over 2**31); a
    constant there (a length another rule knew, behind a `?` PyTensor declared) is
    the int it holds.
    """
    shape = static_shape(x.type)
    if shape[axis] is not None:
        return shape[axis]
    kind, source, source_axis = _traced_dim(x, axis)
    if kind == "static":
        return source
    if kind == "shape":
        size = _shape_element(source, source_axis)
        folded = constant_array(size, "iu")
        return int(folded) if folded is not None and folded >= 0 else size
    return _read_dim(source, source_axis)  # where the trace ended: the same size


def _read_dim(x: ir.Value, axis: int) -> ir.Value:
    """`x`'s size along `axis` read by the IR, as a 0-d i64 value. A block argument's
    is read once, at the start of its block, where every use of it can see the read."""
    memo = _TRACE_MEMO.get()
    if memo is None or not isinstance(x, ir.BlockArgument):
        return hlo.convert(tensor_type((), I64), hlo.get_dimension_size(x, axis))
    key = ("read", x, axis)
    if key not in memo:
        with ir.InsertionPoint.at_block_begin(x.owner):
            memo[key] = hlo.convert(tensor_type((), I64), hlo.get_dimension_size(x, axis))
    return memo[key]


# Ops whose results have the shape of every operand of the same rank.
ELEMENTWISE_OPS = frozenset(
    f"stablehlo.{name}" for name in (
        "abs add and atan2 cbrt ceil clamp compare complex convert cosine count_leading_zeros "
        "divide exponential exponential_minus_one floor imag is_finite log log_plus_one logistic "
        "maximum minimum multiply negate not or popcnt power real reduce_precision remainder "
        "round_nearest_afz round_nearest_even rsqrt select shift_left shift_right_arithmetic "
        "shift_right_logical sign sine sort sqrt subtract tan tanh xor"
    ).split()
) | frozenset(
    f"chlo.{name}" for name in (
        "acos acosh asin asinh atan atanh bessel_i1e cosh digamma erf erf_inv erfc is_inf "
        "is_neg_inf is_pos_inf lgamma next_after polygamma sinh square tan zeta"
    ).split()
)
# Dynamic-shape ops and the index of their i64 output-shape operand.
_SHAPE_OPERAND = {
    "stablehlo.dynamic_broadcast_in_dim": 1,
    "stablehlo.dynamic_iota": 0,
    "stablehlo.dynamic_reshape": 1,
}

# Where each (value, axis) traced during one lowering led. A chain of n elementwise
# nodes that each ask for a dim then traces in O(n), not O(n^2). Values are never
# erased while a lowering runs, so the answers stay true; `dim_trace_memo` scopes it.
_TRACE_MEMO: ContextVar[dict | None] = ContextVar("dim_trace_memo", default=None)
# How far `_traced_dim` walks without a memo (a rule used outside `lower`).
_TRACE_DEPTH = 16


@contextmanager
def dim_trace_memo():
    """Remember traced dims for the duration of one lowering."""
    token = _TRACE_MEMO.set({})
    try:
        yield
    finally:
        _TRACE_MEMO.reset(token)


def _traced_dim(x: ir.Value, axis: int) -> tuple[str, object, int]:
    """Where a dynamic dim of `x` comes from, following elementwise ops and transposes:
    `("static", size, _)` where an operand knows it; `("shape", operand, i)` for
    element i of a dynamic-shape op's i64 shape operand; `("end", value, i)` for the
    value where the trace stopped (a block argument, or an op it cannot see through),
    which has the same size along i. Nothing is emitted: answers are reusable anywhere
    `x` is visible.
    """
    memo = _TRACE_MEMO.get()
    path = []
    while True:
        key = (x, axis)
        if memo is not None and key in memo:
            answer = memo[key]
            break
        if memo is None and len(path) == _TRACE_DEPTH:
            answer = ("end", x, axis)
            break
        path.append(key)
        answer = _trace_step(x, axis)
        if answer[0] != "next":
            break
        _, x, axis = answer
    if memo is not None:
        memo.update(dict.fromkeys(path, answer))
    return answer


def _trace_step(x: ir.Value, axis: int) -> tuple[str, object, int]:
    """One step of `_traced_dim`; `("next", operand, its axis)` to go on."""
    if not isinstance(x, ir.OpResult):
        return "end", x, axis
    op = x.owner
    name = op.name
    if name in _SHAPE_OPERAND:
        return "shape", op.operands[_SHAPE_OPERAND[name]], axis
    if name == "stablehlo.transpose":
        source_axis = list(op.attributes["permutation"])[axis]
        source = op.operands[0]
    elif name in ELEMENTWISE_OPS:
        rank = ir.RankedTensorType(x.type).rank
        source_axis = axis
        same_rank = [v for v in op.operands if ir.RankedTensorType(v.type).rank == rank]
        if not same_rank:
            return "end", x, axis
        # An operand broadcast to this shape holds the dim one step away.
        source = next((v for v in same_rank if isinstance(v, ir.OpResult)
                       and v.owner.name in _SHAPE_OPERAND), same_rank[0])
    else:
        return "end", x, axis
    size = static_shape(source.type)[source_axis]
    return ("static", size, source_axis) if size is not None else ("next", source, source_axis)


def _shape_element(shape: ir.Value, i: int) -> ir.Value:
    """Element i of a 1-d i64 shape tensor; the 0-d dim itself when `shape_tensor` built it."""
    owner = shape.owner if isinstance(shape, ir.OpResult) else None
    part = None
    if owner is not None and owner.name == "stablehlo.concatenate" and all(
        static_shape(p.type) == (1,) for p in owner.operands
    ):
        part = owner.operands[i]
    elif owner is not None and owner.name == "stablehlo.reshape":
        part = shape  # one dim: `shape_tensor` reshaped it alone
    if isinstance(part, ir.OpResult) and part.owner.name == "stablehlo.reshape":
        source = part.owner.operands[0]
        if static_shape(source.type) == () and dtype_of(source.type) == "int64":
            return source
    return vector_element(shape, i)


def shape_of(x: ir.Value) -> tuple[Dim, ...]:
    return tuple(dim_size(x, i) for i in range(len(static_shape(x.type))))


def dim_value(d: Dim) -> ir.Value:
    """A dim as a 0-d i64 value."""
    return ir_constant(np.int64(d)) if isinstance(d, int) else d


def shape_tensor(dims: Sequence[Dim]) -> ir.Value:
    """A 1-d i64 tensor holding `dims` (for the dynamic shape ops)."""
    if is_static(dims):
        return ir_constant(np.asarray(dims, dtype=np.int64).reshape(len(dims)))
    one = tensor_type((1,), I64)
    parts = [hlo.reshape(one, dim_value(d)) for d in dims]
    return parts[0] if len(parts) == 1 else hlo.concatenate(parts, 0)


def result_type(dims: Sequence[Dim], dtype) -> ir.RankedTensorType:
    return tensor_type([d if isinstance(d, int) else None for d in dims], dtype)


def broadcast_in_dim(x: ir.Value, dims: Sequence[Dim], broadcast_dimensions: Sequence[int]) -> ir.Value:
    """Broadcast `x` to shape `dims`; operand dim i maps to result dim broadcast_dimensions[i]."""
    out_type = result_type(dims, value_dtype(x))
    bdims = ir.DenseI64ArrayAttr.get(list(broadcast_dimensions))
    if is_static(dims):
        if ir.RankedTensorType(x.type) == out_type and list(broadcast_dimensions) == list(range(len(dims))):
            return x
        return hlo.broadcast_in_dim(out_type, x, bdims)
    return hlo.dynamic_broadcast_in_dim(out_type, x, shape_tensor(dims), bdims)


def broadcast_to(x: ir.Value, dims: Sequence[Dim]) -> ir.Value:
    """numpy-style broadcast of `x` (aligned on trailing dims) to `dims`."""
    rank = len(static_shape(x.type))
    return broadcast_in_dim(x, dims, range(len(dims) - rank, len(dims)))


def broadcast_shapes(*shapes: Sequence[Dim]) -> list[Dim]:
    """numpy's broadcast of `shapes` (aligned on trailing dims): along each axis a static
    size other than 1 wins; among sizes known only at run time, the first that is not 1
    at run time, so that a 1 broadcasts, also to 0 (a mismatch fails when the call is
    specialized, naming the node)."""
    rank = max((len(s) for s in shapes), default=0)
    dims = []
    for d in range(rank):
        chosen: Dim = 1
        for shape in shapes:
            k = d - (rank - len(shape))
            if k < 0 or (isinstance(shape[k], int) and shape[k] == 1):
                continue
            size = shape[k]
            if isinstance(size, int):
                chosen = size
                break
            if not (isinstance(chosen, int) and chosen == 1):
                size = select(compare(dim_value(chosen), dim_value(1), "EQ"), size, dim_value(chosen))
            chosen = size
        dims.append(chosen)
    return dims


def broadcast_checked(x: ir.Value, dims: Sequence[Dim]) -> tuple[ir.Value, list[ir.Value]]:
    """numpy's broadcast of `x` to `dims` (`broadcast_shapes`'), with a flag for each
    run-time size of x that is neither 1 nor the target's. Such an axis is first padded
    or cut to 1 or the target, so that a call with those sizes reaches the check that
    raises numpy's error, where the module's shapes would disagree; with the sizes
    right, the pad and the cut fold away."""
    shape = shape_of(x)
    offset = len(dims) - len(shape)
    flags, fitted = [], list(shape)
    for k, size in enumerate(shape):
        target = dims[offset + k]
        if isinstance(size, int) or (not isinstance(target, int) and size == target):
            continue  # (the same run-time value: IR values compare by identity with ==)
        one = compare(size, dim_value(1), "EQ")
        flags.append(all_of(compare(size, dim_value(target), "NE"), hlo.not_(one)))
        fitted[k] = select(one, dim_value(1), dim_value(target))
    if flags:
        x = pad_end(x, [0 if f is s else dim_max(dim_sub(f, s), 0) for f, s in zip(fitted, shape)])
        x = slice_dims(x, [0] * len(shape), fitted)
    return broadcast_to(x, dims), flags


def splat(scalar: ir.Value, like: ir.Value) -> ir.Value:
    """A 0-d `scalar` broadcast to `like`'s shape, in `like`'s dtype."""
    return broadcast_in_dim(convert(scalar, value_dtype(like)), shape_of(like), ())


def reshape(x: ir.Value, dims: Sequence[Dim]) -> ir.Value:
    out_type = result_type(dims, value_dtype(x))
    if is_static(dims):
        if ir.RankedTensorType(x.type) == out_type:
            return x
        return hlo.reshape(out_type, x)
    return hlo.dynamic_reshape(out_type, x, shape_tensor(dims))


def iota(dims: Sequence[Dim], dimension: int, dtype) -> ir.Value:
    out_type = result_type(dims, dtype)
    if is_static(dims):
        return hlo.iota(out_type, dimension)
    return hlo.dynamic_iota(out_type, shape_tensor(dims), dimension)


def cast_shape(x: ir.Value, to: ir.Type) -> ir.Value:
    """`x` as the compatible type `to` (static dims made `?` or back; same element type)."""
    if x.type == to:
        return x
    return hlo.convert(to, x)


def with_static_dims(x: ir.Value, shape: Sequence[int | None]) -> ir.Value:
    """`x` typed with the static sizes `shape` knows where its own type has `?`
    (a PyTensor type that knows more than the IR, e.g. after SpecifyShape)."""
    own = static_shape(x.type)
    refined = [o if o is not None else s for o, s in zip(own, shape, strict=True)]
    if refined == list(own):
        return x
    return cast_shape(x, tensor_type(refined, value_dtype(x)))


def fit_static_dims(x: ir.Value, shape: Sequence[int | None]) -> ir.Value:
    """`x` typed with the static sizes `shape` knows where its own type has `?`, as
    `with_static_dims`, for sizes that are only checked at call time (SpecifyShape's):
    those axes are padded with zeros and cut to their sizes, so that arguments of other
    sizes reach that check, where a cast would leave the module's shapes disagreeing.
    With the sizes right, the pad and the cut fold away."""
    dims = shape_of(x)
    fixed = [size if own is None and size is not None else None
             for own, size in zip(static_shape(x.type), shape, strict=True)]
    if all(size is None for size in fixed):
        return x
    high = [0 if size is None else dim_max(dim_sub(size, d), 0) for d, size in zip(dims, fixed)]
    padded = pad_end(x, high)
    limits = [d if size is None else size for d, size in zip(shape_of(padded), fixed)]
    return slice_dims(padded, [0] * len(dims), limits)


def static_slice(x: ir.Value, starts: Sequence[int], limits: Sequence[int]) -> ir.Value:
    """x[starts[0]:limits[0], ...] with unit steps and static bounds."""
    attr = ir.DenseI64ArrayAttr.get
    return hlo.slice(x, attr(list(starts)), attr(list(limits)), attr([1] * len(starts)))


def slice_dims(x: ir.Value, starts: Sequence[Dim], limits: Sequence[Dim]) -> ir.Value:
    """x[starts[0]:limits[0], ...] with unit steps, bounds static or 0-d i64 values."""
    if is_static([*starts, *limits]):
        return static_slice(x, starts, limits)
    out_dims = [end if isinstance(start, int) and start == 0 else dim_sub(end, start)
                for start, end in zip(starts, limits, strict=True)]
    return hlo.real_dynamic_slice(
        result_type(out_dims, value_dtype(x)), x, shape_tensor(starts), shape_tensor(limits),
        shape_tensor([1] * len(starts)),
    )


def slice_axis(x: ir.Value, axis: int, start: Dim, end: Dim) -> ir.Value:
    """x[..., start:end, ...] along `axis`, bounds static or 0-d i64 values."""
    starts = [0] * len(shape_of(x))
    starts[axis] = start
    limits = list(shape_of(x))
    limits[axis] = end
    return slice_dims(x, starts, limits)


def stack(values: Sequence[ir.Value]) -> ir.Value:
    """Tensors of one shape stacked along a new leading axis."""
    return hlo.concatenate([reshape(v, [1, *shape_of(v)]) for v in values], 0)


def unstack(value: ir.Value, count: int) -> list[ir.Value]:
    """The `count` tensors `stack` joined, in order."""
    dims = shape_of(value)[1:]
    return [reshape(slice_axis(value, 0, i, i + 1), dims) for i in range(count)]


def batched(fn: Callable[[ir.Value], ir.Value], *xs: ir.Value) -> list[ir.Value]:
    """fn of each x, in one evaluation on the stacked xs: a special function expands into
    a hundred ops or more, and XLA:CPU compiles each copy's kernels (about 10 ms each)."""
    return unstack(fn(stack(xs)), len(xs))


def pad_end(x: ir.Value, high: Sequence[Dim]) -> ir.Value:
    """x with high[i] more entries (zeros) at the end of each axis i; static where every
    dim and pad is."""
    return pad_zeros(x, [0] * len(high), high)


def pad_zeros(x: ir.Value, low: Sequence[Dim], high: Sequence[Dim]) -> ir.Value:
    """x with low[i] zeros before and high[i] after its entries along each axis i (a
    negative count drops entries); static where every dim and count is."""
    shape = shape_of(x)
    if all(isinstance(p, int) and p == 0 for p in (*low, *high)):
        return x
    zero = ir_constant(np.zeros((), value_dtype(x)))
    interior = [0] * len(shape)
    if is_static([*shape, *low, *high]):
        attr = ir.DenseI64ArrayAttr.get
        return hlo.pad(x, zero, attr(list(low)), attr(list(high)), attr(interior))
    dims = [dim_add(dim_add(d, a), b) for d, a, b in zip(shape, low, high, strict=True)]
    return hlo.dynamic_pad(
        result_type(dims, value_dtype(x)), x, zero, shape_tensor(low), shape_tensor(high), shape_tensor(interior),
    )


def with_scratch(x: ir.Value, axes: Sequence[int]) -> ir.Value:
    """x with one more entry (zeros) at the end of each of `axes`: a loop body's reads and
    writes at a run-time position stay valid IR where such a dim may be 0 (the loop then
    runs no step, and the entry is never part of a result)."""
    if not axes:
        return x
    return pad_end(x, [1 if i in axes else 0 for i in range(len(shape_of(x)))])


def at_least_one(x: ir.Value, axes: Sequence[int]) -> ir.Value:
    """x with each of `axes` at least one entry long: where such an axis may be empty,
    a zero entry is appended and the axis sliced back to max(n, 1). A loop body's reads
    at a run-time position then stay valid IR where n may be 0 (the loop runs no step),
    and once a call's sizes make n positive, the pad and the slice fold away: x is read
    where it is. (`with_scratch`'s extra entry is a copy of x on every call.)"""
    for axis in axes:
        n = shape_of(x)[axis]
        if not (isinstance(n, int) and n > 0):
            x = slice_axis(with_scratch(x, [axis]), axis, 0, dim_max(n, 1))
    return x


def dynamic_index(x, axes, starts, lengths=None):
    """x with the `axes` sliced to size 1 (or `lengths`) at the run-time `starts` (XLA
    clamps them into range)."""
    shape = shape_of(x)
    lengths = dict(zip(axes, lengths or [1] * len(axes)))
    sizes = [lengths.get(i, d) for i, d in enumerate(shape)]
    if is_static(sizes):
        begin = [ir_constant(np.int64(0))] * len(shape)
        for i, s in zip(axes, starts):
            begin[i] = s
        return hlo.dynamic_slice(x, begin, ir.DenseI64ArrayAttr.get(sizes))
    index = hlo.concatenate([reshape(s, [1]) for s in starts], 0)
    dnums = hlo.GatherDimensionNumbers.get(
        offset_dims=list(range(len(shape))), collapsed_slice_dims=[], operand_batching_dims=[],
        start_indices_batching_dims=[], start_index_map=list(axes), index_vector_dim=0,
    )
    out_type = result_type(sizes, value_dtype(x))
    return hlo.dynamic_gather(x, index, shape_tensor(sizes), dnums, results=[out_type])


def gather_dims(x, axes, batch, front):
    """Output dims of x[index] and where its non-indexed (offset) dims go."""
    shape = shape_of(x)
    out = [d for i, d in enumerate(shape) if i not in axes]
    at = 0 if front else axes[0]
    out[at:at] = batch
    offset = [j for j in range(len(out)) if not at <= j < at + len(batch)]
    return out, offset


def gather_indexed(x, axes, index, front):
    """numpy's x[..., index, ...] on `axes`; `index` is (*batch, len(axes)) i64, in range."""
    shape = shape_of(x)
    batch = list(shape_of(index))[:-1]
    out_dims, offset = gather_dims(x, axes, batch, front)
    if any(isinstance(shape[a], int) and shape[a] == 0 for a in axes):  # nothing to read: numpy's result is empty (or raises)
        return full(0, out_dims, value_dtype(x))
    dnums = hlo.GatherDimensionNumbers.get(
        offset_dims=offset, collapsed_slice_dims=list(axes), operand_batching_dims=[],
        start_indices_batching_dims=[], start_index_map=list(axes), index_vector_dim=len(batch),
    )
    # A `?` indexed dim may be 0 at run time, where a slice of 1 would not fit: min(1, dim).
    sizes = [(1 if isinstance(d, int) else hlo.minimum(d, ir_constant(np.int64(1)))) if i in axes else d
             for i, d in enumerate(shape)]
    out_type = result_type(out_dims, value_dtype(x))
    if is_static(sizes):
        return hlo.gather(x, index, dnums, ir.DenseI64ArrayAttr.get(sizes), results=[out_type])
    return hlo.dynamic_gather(x, index, shape_tensor(sizes), dnums, results=[out_type])


def along_axis_index(index: ir.Value, axis: int) -> ir.Value:
    """The positions np.take_along_axis reads, as `gather_indexed` takes them: `index`
    along `axis`, each element's own coordinate along the others (shape (*index's, rank))."""
    dims = list(shape_of(index))
    coords = [reshape(index, [*dims, 1]) if k == axis else iota([*dims, 1], k, I64) for k in range(len(dims))]
    return hlo.concatenate(coords, len(dims))


def take_along_axis(x: ir.Value, index: ir.Value, axis: int) -> ir.Value:
    """np.take_along_axis: out[..., i, ...] = x[..., index[..., i, ...], ...] along `axis`;
    `index` (i64, in range) has x's rank and its dims except along `axis`."""
    return gather_indexed(x, list(range(len(shape_of(index)))), along_axis_index(index, axis), front=True)


def identity_matrix(dims: Sequence[Dim], dtype) -> ir.Value:
    """Identity matrices of `dtype` over the last two of `dims` (ones where row == column)."""
    rank = len(dims)
    return convert(compare(iota(dims, rank - 2, I64), iota(dims, rank - 1, I64), "EQ"), dtype)


def diagonal(x: ir.Value, offset: int = 0) -> ir.Value:
    """np.diagonal over x's last two axes, x[..., k, k + offset] (shape (*batch, length)):
    a gather of the diagonal's entries, which reads only those whatever x's layout (a
    masked sum reads all of x)."""
    dims = shape_of(x)
    rank = len(dims)
    row0, col0 = max(0, -offset), max(0, offset)
    length = dim_max(dim_min(dim_sub(dims[-2], row0), dim_sub(dims[-1], col0)), 0)
    positions = iota([length, 1], 0, "int64")
    rows, cols = (positions if k == 0 else hlo.add(positions, full_like(positions, k)) for k in (row0, col0))
    return gather_indexed(x, [rank - 2, rank - 1], hlo.concatenate([rows, cols], 1), front=False)


def read_entry(x: ir.Value, index: Sequence[ir.Value]) -> ir.Value:
    """x[i0, i1, ...] at run-time positions (the leading len(index) dims dropped), as a
    loop body reads one step's row or one batch entry; XLA clamps them into range."""
    row = dynamic_index(x, list(range(len(index))), list(index))
    return reshape(row, shape_of(x)[len(index):])


def write_entry(buffer: ir.Value, value: ir.Value, index: Sequence[ir.Value]) -> ir.Value:
    """buffer with buffer[i0, i1, ...] = value (cast to the buffer's dtype)."""
    k = len(index)
    value = convert(value, value_dtype(buffer))
    update = reshape(value, [1] * k + list(shape_of(value)))
    update = with_static_dims(update, [1] * k + list(static_shape(buffer.type))[k:])
    starts = list(index) + [dim_value(0)] * (len(static_shape(buffer.type)) - k)
    return hlo.dynamic_update_slice(buffer, update, starts)


def vector_element(vector: ir.Value, i: int) -> ir.Value:
    """Element i of a 1-d integer tensor, as a 0-d i64 value."""
    return convert(reshape(static_slice(vector, [i], [i + 1]), ()), I64)


def transpose(x: ir.Value, perm: Sequence[int]) -> ir.Value:
    if list(perm) == list(range(len(perm))):
        return x
    return hlo.transpose(x, ir.DenseI64ArrayAttr.get(list(perm)))


def dim_product(dims: Sequence[Dim]) -> Dim:
    """Product of dims, folded to an int where all are static."""
    static = int(np.prod([d for d in dims if isinstance(d, int)], dtype=np.int64))
    dynamic = [d for d in dims if not isinstance(d, int)]
    if not dynamic:
        return static
    acc = dynamic[0]
    for d in dynamic[1:]:
        acc = hlo.multiply(acc, d)
    if static != 1:
        acc = hlo.multiply(acc, ir_constant(np.int64(static)))
    return acc


def _dim_binary(a: Dim, b: Dim, static, emit) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return static(a, b)
    return emit(dim_value(a), dim_value(b))


def dim_add(a: Dim, b: Dim) -> Dim:
    return _dim_binary(a, b, lambda x, y: x + y, hlo.add)


def dim_sub(a: Dim, b: Dim) -> Dim:
    return _dim_binary(a, b, lambda x, y: x - y, hlo.subtract)


def dim_min(a: Dim, b: Dim) -> Dim:
    return _dim_binary(a, b, min, hlo.minimum)


def dim_max(a: Dim, b: Dim) -> Dim:
    return _dim_binary(a, b, max, hlo.maximum)


def dim_quotient(a: Dim, b: Dim) -> Dim:
    """a // b for dims (non-negative, so truncation is floor)."""
    return _dim_binary(a, b, lambda x, y: x // y, divide)


def add_all(*values: ir.Value) -> ir.Value:
    """values[0] + values[1] + ... (same shapes and dtype)."""
    return functools.reduce(hlo.add, values)


def multiply_all(*values: ir.Value) -> ir.Value:
    return functools.reduce(hlo.multiply, values)


def polynomial(t: ir.Value, coefficients: Sequence[float]) -> ir.Value:
    """sum_k coefficients[k] t**k by Horner's rule, the constants in t's dtype."""
    total = full_like(t, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        total = hlo.add(hlo.multiply(total, t), full_like(t, c))
    return total


def all_of(*masks: ir.Value) -> ir.Value:
    """The elementwise AND of i1 tensors."""
    return functools.reduce(hlo.and_, masks)


def any_of(*masks: ir.Value) -> ir.Value:
    return functools.reduce(hlo.or_, masks)


def select(pred: ir.Value, on_true: ir.Value, on_false: ir.Value) -> ir.Value:
    return hlo.select(pred, on_true, on_false)


# --- contractions -----------------------------------------------------------------


def dot_general(
    lhs: ir.Value,
    rhs: ir.Value,
    contracting: tuple[Sequence[int], Sequence[int]],
    batch: tuple[Sequence[int], Sequence[int]] = ((), ()),
    dtype=None,
) -> ir.Value:
    """numpy's matmul/tensordot arithmetic in `dtype` (default: the operands' upcast).

    Result dims: batch dims, then lhs free dims, then rhs free dims (StableHLO's order).
    Computed at the highest precision (no TF32/bf16 passes on accelerators); integers
    wrap as in numpy; booleans are `any(a & b)`, as numpy's matmul of bools.
    """
    dtype = np.dtype(dtype or np.promote_types(value_dtype(lhs), value_dtype(rhs)))
    compute = np.dtype(np.int32) if dtype == np.bool_ else dtype
    (lc, rc), (lb, rb) = contracting, batch
    lhs, lc, lb = _through_transpose(lhs, lc, lb)
    rhs, rc, rb = _through_transpose(rhs, rc, rb)
    lhs, rhs = convert(lhs, compute), convert(rhs, compute)
    lhs_dims, rhs_dims = shape_of(lhs), shape_of(rhs)
    dims = [lhs_dims[i] for i in lb]
    dims += [d for i, d in enumerate(lhs_dims) if i not in lc and i not in lb]
    dims += [d for i, d in enumerate(rhs_dims) if i not in rc and i not in rb]
    numbers = hlo.DotDimensionNumbers.get(
        lhs_batching_dimensions=list(lb), rhs_batching_dimensions=list(rb),
        lhs_contracting_dimensions=list(lc), rhs_contracting_dimensions=list(rc),
    )
    highest = ir.ArrayAttr.get([hlo.PrecisionAttr.get("HIGHEST")] * 2)
    out = hlo.dot_general(result_type(dims, compute), lhs, rhs, numbers, precision_config=highest)
    return convert(out, dtype)


def _through_transpose(x: ir.Value, contracting: Sequence[int], batch: Sequence[int]):
    """A dot_general operand `x` that is a transpose, as the transposed value and the dims
    `contracting` and `batch` name in it, where its free dims keep their order (so the
    result's do). XLA:CPU folds such a transpose into a matrix product itself, but not
    into a matrix-vector one: it copies the matrix transposed first. The gradient of a
    regression, X.T @ r with X of 10^5 x 50 float64s, took 30 ms a call for that copy,
    against 5 ms contracting X's rows in place. A transpose seen through a cast to static
    sizes (`with_static_dims`: the transpose of a SpecifyShape'd array) folds too, the
    transposed value cast to those sizes."""
    transposed = _shape_cast_source(x)
    if not (isinstance(transposed, ir.OpResult) and transposed.owner.name == "stablehlo.transpose"):
        return x, contracting, batch
    perm = list(ir.DenseI64ArrayAttr(transposed.owner.attributes["permutation"]))
    free = [perm[i] for i in range(len(perm)) if i not in contracting and i not in batch]
    if free != sorted(free):
        return x, contracting, batch
    sizes = [None] * len(perm)
    for i, size in zip(perm, static_shape(x.type)):
        sizes[i] = size
    source = with_static_dims(transposed.owner.operands[0], sizes)
    return source, [perm[i] for i in contracting], [perm[i] for i in batch]


def _shape_cast_source(x: ir.Value) -> ir.Value:
    """What `x` casts to other static sizes (`cast_shape`), or `x` if it is no such cast."""
    if isinstance(x, ir.OpResult) and x.owner.name == "stablehlo.convert":
        source = x.owner.operands[0]
        if ir.RankedTensorType(source.type).element_type == ir.RankedTensorType(x.type).element_type:
            return source
    return x


# --- foreign functions ------------------------------------------------------------


def row_major(rank: int) -> tuple[int, ...]:
    """A custom call's layout for row-major (numpy-order) data: minor dim first."""
    return tuple(range(rank - 1, -1, -1))


def custom_call(
    target: str,
    operands: Sequence[ir.Value],
    results: Sequence[tuple[Sequence[Dim], object]],
    *,
    config: dict[str, ir.Attribute] | None = None,
    operand_layouts: Sequence[Sequence[int]] | None = None,
    result_layouts: Sequence[Sequence[int]] | None = None,
    aliases: dict[int, int] | None = None,
) -> list[ir.Value]:
    """A typed-FFI `stablehlo.custom_call` (api_version 4, attributes in a dictionary).

    `results` are (dims, dtype) pairs. When a dim is only known at run time, every
    result's shape travels as an extra operand named by `indices_of_shape_operands`:
    `stablehlo-refine-shapes` reads them, and `canonicalize-dynamism` drops them once
    the call's shapes are constants, so XLA sees the plain call.
    """
    operands = list(operands)
    results = list(results)
    for arg, out in (aliases or {}).items():
        # XLA wants an aliased result typed exactly as its operand, also once shapes are
        # refined: read its dims from the operand itself, which refines with it (a dim
        # traced elsewhere may be one refinement cannot make static).
        x = operands[arg]
        dims = [d if d is not None else _read_dim(x, i) for i, d in enumerate(static_shape(x.type))]
        results[out] = (dims, results[out][1])
        # Shape refinement may learn some of x's dims before the result's (which wait
        # for every dim of its shape operand): reshaped to the same dims (a no-op when
        # they are static), x refines with the result, at once.
        operands[arg] = reshape(x, dims)
    types = [result_type(dims, dtype) for dims, dtype in results]
    shaped = not all(is_static(dims) for dims, _ in results)
    if shaped:
        first = len(operands)
        operands += [shape_tensor(dims) for dims, _ in results]
        if operand_layouts is not None:
            operand_layouts = list(operand_layouts) + [(0,)] * len(results)

    def layouts(values):
        return ir.ArrayAttr.get([
            ir.DenseIntElementsAttr.get(np.asarray(v, dtype=np.int64).reshape(-1), type=ir.IndexType.get())
            for v in values
        ])

    op = hlo.CustomCallOp(
        types, operands, target,
        has_side_effect=False,
        backend_config=ir.DictAttr.get(dict(config or {})),
        api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4),
        operand_layouts=None if operand_layouts is None else layouts(operand_layouts),
        result_layouts=None if result_layouts is None else layouts(result_layouts),
        output_operand_aliases=None if not aliases else ir.ArrayAttr.get([
            hlo.OutputOperandAlias.get(
                output_tuple_indices=[out] if len(types) > 1 else [], operand_index=arg,
                operand_tuple_indices=[],
            )
            for arg, out in aliases.items()
        ]),
    )
    if shaped:
        op.operation.attributes["indices_of_shape_operands"] = ir.DenseIntElementsAttr.get(
            np.arange(first, first + len(results), dtype=np.int64)
        )
    return list(op.results)
