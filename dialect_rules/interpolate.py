"""interpolate: PyMC's SplineWrapper (`pm.Interpolated`'s logp, and its gradient, which
wraps the spline's derivative): a scipy FITPACK spline evaluated as FITPACK's `splev`.

The knots t, coefficients c and degree k are the Op's own data, so they enter the module
as constants. Each x falls in the knot interval t[l] <= x < t[l + 1], l clamped to
[k, n - k - 2] (so points outside the support extrapolate the end pieces, and NaN takes
the last one, as in FITPACK's search); de Boor's recursion (FITPACK's `fpbspl`, in its
order of operations) gives the k + 1 B-splines there, unrolled since k is static.
"""

from __future__ import annotations

import numpy as np
from jax.extend.mlir import ir
from jax.extend.mlir.dialects import stablehlo as hlo

from dialect_rules.extra_ops import sorted_positions
from lowering.builders import compare, convert, divide, full_like, gather_indexed, ir_constant, reshape, select, shape_of
from lowering.regions import any_true
from lowering.registry import register_lowering

# scipy's word for a point outside the knots when the spline's `ext` is "raise"
_OUT_OF_DOMAIN = "Found x value not in the domain"
_EXTRAPOLATE, _ZEROS, _RAISE, _CONST = range(4)


@register_lowering("pymc.distributions.dist_math.SplineWrapper")
def lower_spline(ctx, node, x):
    t, c, k = node.op.spline._eval_args
    ext = node.op.spline.ext
    t, c, n = np.asarray(t, np.float64), np.asarray(c, np.float64), len(t)
    x = convert(x, "float64")
    first, last = full_like(x, t[k]), full_like(x, t[n - k - 1])
    below, above = compare(x, first, "LT"), compare(x, last, "GT")
    outside = hlo.or_(below, above)
    if ext == _RAISE:
        ctx.runtime_check(any_true(outside), ValueError, _OUT_OF_DOMAIN)
    elif ext == _CONST:
        x = select(below, first, select(above, last, x))
    interval = sorted_positions(ir_constant(t), x, "right")
    interval = hlo.clamp(full_like(interval, k + 1), interval, full_like(interval, n - k - 1))
    value = _de_boor(t, c, k, x, hlo.subtract(interval, full_like(interval, 1)))
    if ext == _ZEROS:
        value = select(outside, full_like(value, 0.0), value)
    return convert(value, node.outputs[0].type.dtype)


def _de_boor(t: np.ndarray, c: np.ndarray, k: int, x: ir.Value, interval: ir.Value) -> ir.Value:
    """sum_j c[l - k + j] B_j(x), the B-splines B_0..B_k nonzero on knot interval l."""

    def take(table: np.ndarray, offset: int) -> ir.Value:  # table[l + offset], elementwise
        index = hlo.add(interval, full_like(interval, offset))
        return gather_indexed(ir_constant(table), [0], reshape(index, [*shape_of(x), 1]), front=False)

    knot = {m: take(t, m) for m in range(1 - k, k + 1)}
    zero = full_like(x, 0.0)
    h = [full_like(x, 1.0)]
    for j in range(1, k + 1):
        previous, h = h, [zero] * (j + 1)
        for i in range(1, j + 1):
            right, left = knot[i], knot[i - j]
            width = hlo.subtract(right, left)
            f = divide(previous[i - 1], width)
            repeated = compare(width, zero, "EQ")  # a repeated knot: that B-spline is 0
            h[i - 1] = select(repeated, h[i - 1], hlo.add(h[i - 1], hlo.multiply(f, hlo.subtract(right, x))))
            h[i] = select(repeated, zero, hlo.multiply(f, hlo.subtract(x, left)))
    total = zero
    for j in range(k + 1):
        total = hlo.add(total, hlo.multiply(take(c, j - k), h[j]))
    return total
