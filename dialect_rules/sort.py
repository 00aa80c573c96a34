"""SortOp and ArgSortOp: one stable `stablehlo.sort` with numpy's order.

numpy sorts NaN to the end (complex numbers: R+Rj < R+nanj < nan+Rj < nan+nanj, each
class ordered by its non-NaN parts). Ties keep the input order: numpy's stable kinds do
the same, and it is one of the orders its "quicksort" may give.
"""

from __future__ import annotations

import numpy as np
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.graph.basic import Constant
from pytensor.tensor.sort import ArgSortOp, SortOp

from lowering.builders import compare, convert, full_like, iota, is_nan, shape_of, value_dtype
from lowering.errors import UnsupportedParameterError
from lowering.regions import sort
from lowering.registry import register_lowering


def _nan_last_less(a, b):
    """a < b with every NaN after every number."""
    return hlo.or_(compare(a, b, "LT"), hlo.and_(compare(a, a, "EQ"), is_nan(b)))


def _complex_less(a, b):
    ra, ia, rb, ib = hlo.real(a), hlo.imag(a), hlo.real(b), hlo.imag(b)

    def nan_class(re, im):  # 0: no NaN, 1: imag NaN, 2: real NaN, 3: both
        real_nan = convert(is_nan(re), "int32")
        return hlo.add(hlo.add(real_nan, real_nan), convert(is_nan(im), "int32"))

    class_a, class_b = nan_class(ra, ia), nan_class(rb, ib)

    def is_class(k):
        return compare(class_a, full_like(class_a, k), "EQ")

    lexicographic = hlo.or_(
        compare(ra, rb, "LT"), hlo.and_(compare(ra, rb, "EQ"), compare(ia, ib, "LT"))
    )
    within = hlo.select(
        is_class(0), lexicographic,
        hlo.select(is_class(1), compare(ra, rb, "LT"), hlo.and_(is_class(2), compare(ia, ib, "LT"))),
    )
    return hlo.or_(compare(class_a, class_b, "LT"), hlo.and_(compare(class_a, class_b, "EQ"), within))


def numpy_less(dtype):
    """`np.sort`'s comparator for `dtype`, elementwise on two values of one shape."""
    kind = np.dtype(dtype).kind
    if kind == "f":
        return _nan_last_less
    if kind == "c":
        return _complex_less
    return lambda a, b: compare(a, b, "LT")


def sort_axis(node) -> int:
    axis_var, ndim = node.inputs[1], node.inputs[0].type.ndim
    if not isinstance(axis_var, Constant):
        raise UnsupportedParameterError(node, f"axis={axis_var}", "the axis must be a constant")
    axis = int(axis_var.data)
    if ndim == 0 or not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(
            f"axis {axis} is out of bounds for array of dimension {ndim} (node: {node})"
        )
    return axis % ndim


@register_lowering(SortOp)
def lower_sort(ctx, node, x, _axis):
    less = numpy_less(value_dtype(x))
    (out,) = sort([x], sort_axis(node), lambda a, b: less(a[0], b[0]))
    return out


@register_lowering(ArgSortOp)
def lower_argsort(ctx, node, x, _axis):
    axis = sort_axis(node)
    less = numpy_less(value_dtype(x))
    positions = iota(shape_of(x), axis, "int64")
    _, order = sort([x, positions], axis, lambda a, b: less(a[0], b[0]))
    return order
