"""extra_ops: CumOp, SearchsortedOp, FillDiagonal(Offset), Bartlett, Repeat,
UnravelIndex, RavelMultiIndex, Unique, CpuContiguous.

CumOp: numpy accumulates small integers and bools in int64 and PyTensor's output type
keeps the input dtype, so the result is numpy's modulo the dtype: a wrapping scan in
the dtype itself (for bools: a running `or` / `and`).
"""

from __future__ import annotations

import numpy as np
from jax.extend.mlir.dialects import stablehlo as hlo
from jax.extend.mlir import ir
from pytensor.graph.basic import Constant
from pytensor.tensor.extra_ops import (
    Bartlett,
    CpuContiguous,
    CumOp,
    FillDiagonal,
    FillDiagonalOffset,
    RavelMultiIndex,
    Repeat,
    SearchsortedOp,
    Unique,
    UnravelIndex,
)

from dialect_rules.scalar import int_divmod
from dialect_rules.sort import numpy_less
from lowering.builders import (
    broadcast_in_dim,
    compare,
    convert,
    dim_add,
    dim_max,
    dim_min,
    dim_product,
    dim_sub,
    dim_value,
    divide,
    full,
    full_like,
    gather_indexed,
    iota,
    ir_constant,
    is_nan,
    remainder,
    reshape,
    select,
    shape_of,
    slice_axis,
    splat,
    transpose,
    value_dtype,
    vector_element,
)
from lowering.regions import any_true, cumulative, fold, prefix_scan, scan_identity, scatter_indexed, sort, while_loop
from lowering.registry import register_lowering

@register_lowering(CpuContiguous)
def lower_cpu_contiguous(ctx, node, x):
    return x  # XLA decides layouts; every result it returns is a C-contiguous array


_COMBINE = {("add", False): hlo.add, ("mul", False): hlo.multiply, ("add", True): hlo.or_, ("mul", True): hlo.and_}


@register_lowering(CumOp)
def lower_cumop(ctx, node, x):
    dtype = np.dtype(value_dtype(x))
    combine = _COMBINE[(node.op.mode, dtype == np.bool_)]
    axis = node.op.axis % node.inputs[0].type.ndim
    # (each row combined into the total before it, in numpy's order: `regions.in_order_blocks`)
    return cumulative(x, axis, combine, scan_identity(combine, dtype), written_out=True)


@register_lowering(SearchsortedOp)
def lower_searchsorted(ctx, node, a, v, sorter=None):
    """Count, for each value, the elements of `a` before it in numpy's sort order."""

    if sorter is not None:
        (n,) = shape_of(a)
        sorter = convert(sorter, "int64")
        bad = hlo.or_(compare(sorter, full_like(sorter, 0), "LT"), compare(sorter, splat(dim_value(n), sorter), "GE"))
        ctx.runtime_check(any_true(bad), ValueError, "searchsorted: sorter index out of range")
        a = gather_indexed(a, [0], reshape(sorter, [*shape_of(sorter), 1]), front=False)
    dtype = np.promote_types(value_dtype(a), value_dtype(v))
    return sorted_positions(convert(a, dtype), convert(v, dtype), node.op.side)


def sorted_positions(a: ir.Value, v: ir.Value, side: str) -> ir.Value:
    """numpy's `searchsorted(a, v, side)` (int64, shaped like v) for a sorted vector `a`
    of v's dtype: how many elements of `a` come before each value in numpy's order
    (NaN last)."""
    dims = list(shape_of(v))
    rank = len(dims)
    wide = dims + [shape_of(a)[0]]
    a_wide = broadcast_in_dim(a, wide, [rank])
    v_wide = broadcast_in_dim(v, wide, list(range(rank)))
    less = numpy_less(value_dtype(v))
    if side == "left":
        before = less(a_wide, v_wide)  # a[k] < v
    else:
        before = hlo.not_(less(v_wide, a_wide))  # a[k] <= v
    return fold(convert(before, "int64"), [rank], hlo.add, 0)


def _diagonal_mask(dims, offset=None):
    """True where all indices are equal (2-D with `offset`: where j - i == offset)."""
    first = iota(dims, 0, "int64")
    if offset is not None:
        offset = broadcast_in_dim(convert(offset, "int64"), dims, ())
        return compare(hlo.subtract(iota(dims, 1, "int64"), first), offset, "EQ")
    mask = None
    for axis in range(1, len(dims)):
        equal = compare(iota(dims, axis, "int64"), first, "EQ")
        mask = equal if mask is None else hlo.and_(mask, equal)
    return mask


@register_lowering(FillDiagonal)
def lower_fill_diagonal(ctx, node, a, val):
    return select(_diagonal_mask(shape_of(a)), splat(val, a), a)


@register_lowering(FillDiagonalOffset)
def lower_fill_diagonal_offset(ctx, node, a, val, offset):
    return select(_diagonal_mask(shape_of(a), offset), splat(val, a), a)


@register_lowering(Bartlett)
def lower_bartlett(ctx, node, m):
    """np.bartlett(M): 1 - |n| / (M - 1) for n = 1-M, 3-M, ..., M-1; [1.] for M == 1."""
    m = convert(m, "int64")
    length = hlo.maximum(m, ir_constant(np.int64(0)))
    k = iota([length], 0, "float64")
    mf = broadcast_in_dim(convert(m, "float64"), [length], ())
    one = full_like(mf, 1.0)
    n = hlo.add(hlo.subtract(one, mf), hlo.add(k, k))
    window = hlo.subtract(one, divide(hlo.abs(n), hlo.subtract(mf, one)))
    return select(compare(mf, one, "EQ"), one, window)


@register_lowering(Repeat)
def lower_repeat(ctx, node, x, repeats):
    """np.repeat along an axis: a gather of the repeated positions, computed here for
    constant repeats, otherwise by the program (`repeat_positions`)."""
    axis = node.op.axis  # (non-negative: make_node's rule)
    size = shape_of(x)[axis]
    if isinstance(node.inputs[1], Constant):
        counts = np.asarray(node.inputs[1].data, dtype=np.int64).reshape(-1)
        if (counts < 0).any():
            raise ValueError(f"repeats may not contain negative values (node: {node})")
        if len(counts) == 1 and isinstance(size, int):
            counts = np.repeat(counts, size)
        if len(counts) == size:
            positions = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
            return gather_indexed(x, [axis], ir_constant(positions.reshape(-1, 1)), front=False)
    positions = repeat_positions(ctx, repeats, size)
    return gather_indexed(x, [axis], reshape(positions, [*shape_of(positions), 1]), front=False)


def repeat_positions(ctx, counts, n) -> ir.Value:
    """np.repeat(np.arange(n), counts) (i64), `counts` a vector computed at run time: its
    length is their sum, which the runtime measures before it specializes. A 1 is added
    where each element's run ends, and the running sum of those is the position."""
    counts = convert(counts, "int64")
    (m,) = shape_of(counts)
    if not (isinstance(m, int) and m == n):  # numpy broadcasts one count to all n
        if not (isinstance(m, int) and m == 1):
            ctx.runtime_check(
                hlo.and_(compare(dim_value(m), dim_value(n), "NE"), compare(dim_value(m), dim_value(1), "NE")),
                ValueError, "repeat: the repeats do not broadcast to the length of the axis (operands "
                "could not be broadcast together)",
            )
        own = iota([n], 0, "int64")
        first_or_own = hlo.minimum(own, splat(dim_value(dim_sub(m, 1)), own))
        counts = gather_indexed(counts, [0], reshape(first_or_own, [n, 1]), front=False)
    zero = full_like(counts, 0)
    ctx.runtime_check(any_true(compare(counts, zero, "LT")), ValueError, "repeats may not contain negative values")
    counts = hlo.maximum(counts, zero)  # (the check raises; the shapes must stay valid)
    total = fold(counts, [0], hlo.add, 0)
    ends = cumulative(counts, 0, hlo.add, 0)
    # Runs that end at the total (the last ones) mark the spare slot past it.
    ends = hlo.minimum(ends, splat(total, ends))
    slots = [dim_add(total, 1)]
    marks = scatter_indexed(full(0, slots, "int64"), [0], reshape(ends, [n, 1]), full(1, [n], "int64"), False, hlo.add)
    return slice_axis(cumulative(marks, 0, hlo.add, 0), 0, 0, total)


def _dims_and_strides(dims_vector, count: int, order: str):
    """The entries of a 1-D dims vector as 0-d i64 values, and each axis's stride."""
    dims_vector = convert(dims_vector, "int64")
    dims = [vector_element(dims_vector, j) for j in range(count)]
    strides = [None] * count
    stride = ir_constant(np.int64(1))
    for j in (reversed(range(count)) if order == "C" else range(count)):
        strides[j] = stride
        stride = hlo.multiply(stride, dims[j])
    return dims, strides, stride  # the last: the total size


@register_lowering(UnravelIndex)
def lower_unravel_index(ctx, node, indices, dims_vector):
    index = convert(indices, "int64")
    dims, strides, size = _dims_and_strides(dims_vector, len(node.outputs), node.op.order)
    outside = hlo.or_(compare(index, full_like(index, 0), "LT"), compare(index, splat(size, index), "GE"))
    ctx.runtime_check(any_true(outside), ValueError, "unravel_index: an index is out of bounds for the size of dims")
    one = ir_constant(np.int64(1))
    outputs = []
    for dim, stride in zip(dims, strides):
        safe_dim = hlo.maximum(dim, one)  # a zero dim only occurs with the error above
        outputs.append(remainder(divide(index, splat(stride, index)), splat(safe_dim, index)))
    return tuple(outputs)


@register_lowering(RavelMultiIndex)
def lower_ravel_multi_index(ctx, node, *operands):

    *coordinates, dims_vector = operands
    dims, strides, _ = _dims_and_strides(dims_vector, len(coordinates), node.op.order)
    flat, bad = None, None
    for coord, dim, stride in zip(coordinates, dims, strides):
        coord = convert(coord, "int64")
        dim_b, zero = splat(dim, coord), full_like(coord, 0)
        if node.op.mode == "raise":
            outside = hlo.or_(compare(coord, zero, "LT"), compare(coord, dim_b, "GE"))
            bad = outside if bad is None else hlo.or_(bad, outside)
        elif node.op.mode == "wrap":  # numpy's modulo: the result has the divisor's sign
            coord = int_divmod(coord, dim_b)[1]
        else:  # clip
            coord = hlo.clamp(zero, coord, hlo.subtract(dim_b, full_like(coord, 1)))
        term = hlo.multiply(coord, splat(stride, coord))
        flat = term if flat is None else hlo.add(flat, term)
    if bad is not None:
        ctx.runtime_check(any_true(bad), ValueError, "ravel_multi_index: invalid entry in coordinates array")
    return flat


# --- Unique -----------------------------------------------------------------------------


@register_lowering(Unique)
def lower_unique(ctx, node, x):
    """np.unique, flattened or of the slices along an axis, with its index, inverse and
    counts. Both forms find the unique rows of an (n, m) matrix: the flattened input is
    n rows of one element; with an axis, the axis moved to the front and the other dims
    flattened into m. A lexicographic stable sort of the rows, runs of equal rows
    starting where a row differs from the one before it, and scatters by run number.
    The number of runs k is a size the program computes: the outputs are buffers of
    size n sliced to k, and the runtime measures k before specializing
    (`specialize.runtime_dims`).

    Flattened (and 1-d with an axis, which numpy flattens), all NaNs are one value, as
    numpy's `equal_nan`; rows compare as numpy's structured elements, where a row
    holding a NaN equals no other row."""

    op, ndim = node.op, node.inputs[0].type.ndim
    if op.axis is None:
        perm, moved = [0], reshape(x, [dim_product(shape_of(x))])
    else:
        perm = [op.axis] + [d for d in range(ndim) if d != op.axis]
        moved = transpose(x, perm)
    dims = shape_of(moved)
    n = dims[0]
    rows = reshape(moved, [n, dim_product(dims[1:])])
    flattened = op.axis is None or ndim == 1
    less = numpy_less(value_dtype(x)) if flattened else _field_less(value_dtype(x))
    order = _lexicographic_order(rows, less)
    ordered = gather_indexed(rows, [0], reshape(order, [n, 1]), front=True)
    # run starts: the first row, and each row unlike the one before it
    head, rest = dim_min(n, 1), dim_max(dim_sub(n, 1), 0)  # sizes 1 and n-1, or 0 and 0
    previous = hlo.concatenate([slice_axis(ordered, 0, 0, head), slice_axis(ordered, 0, 0, rest)], 0)
    differs = compare(ordered, previous, "NE")
    if np.dtype(value_dtype(x)).kind in "fc" and flattened:
        differs = hlo.and_(differs, hlo.not_(hlo.and_(is_nan(ordered), is_nan(previous))))
    positions = iota([n], 0, "int64")
    starts = hlo.or_(fold(differs, [1], hlo.or_, False), compare(positions, full_like(positions, 0), "EQ"))
    run = hlo.subtract(prefix_scan(convert(starts, "int64"), 0, hlo.add, 0), full_like(positions, 1))
    k = fold(convert(starts, "int64"), [0], hlo.add, 0)

    def set_(_, update):
        return update

    def add(current, update):
        return hlo.add(current, update)

    def scatter_at(index, updates, combine):  # an n-buffer, updates[i] combined in at index[i]
        return scatter_indexed(full(0, [n], "int64"), [0], reshape(index, [n, 1]), updates, True, combine)

    # the first row of each run by run number (the others scatter out of range)
    first = slice_axis(scatter_at(select(starts, run, splat(dim_value(n), run)), order, set_), 0, 0, k)
    unique = gather_indexed(rows, [0], reshape(first, [k, 1]), front=True)
    outputs = [transpose(reshape(unique, [k, *dims[1:]]), list(np.argsort(perm)))]
    if op.return_index:
        outputs.append(first)
    if op.return_inverse:
        outputs.append(scatter_at(order, run, set_))
    if op.return_counts:
        outputs.append(slice_axis(scatter_at(run, full(1, [n], "int64"), add), 0, 0, k))
    return tuple(convert(o, out.type.dtype) for o, out in zip(outputs, node.outputs, strict=True))


def _field_less(dtype):
    """The order numpy's sort gives one field of a structured element: np.sort's, but
    float16's compare puts NaN first (numpy's HALF_compare)."""

    if np.dtype(dtype) == np.float16:
        return lambda a, b: hlo.or_(compare(a, b, "LT"), hlo.and_(is_nan(a), compare(b, b, "EQ")))
    return numpy_less(dtype)


def _lexicographic_order(rows, less):
    """The positions of the (n, m) `rows` in lexicographic order (`less` on each
    element), equal rows in input order: stable sorts by one column at a time, from the
    last column to the first, each keeping the order the later columns gave its ties.
    A loop over the columns, unless there is just one."""

    n, m = shape_of(rows)

    def sort_by(key, order):
        return sort([key, order], 0, lambda a, b: less(a[0], b[0]))[1]

    order = iota([n], 0, "int64")
    if isinstance(m, int) and m == 1:  # no loop; the positions are still in input order
        return sort_by(reshape(rows, [n]), order)
    one = ir_constant(np.int64(1))

    def cond(values):
        return compare(values[0], full_like(one, 0), "GE")

    def body(values):
        j, order = values
        at = hlo.concatenate([reshape(order, [n, 1]), broadcast_in_dim(j, [n, 1], [])], 1)
        key = gather_indexed(rows, [0, 1], at, front=True)  # rows[order, j]
        return [hlo.subtract(j, one), sort_by(key, order)]

    return while_loop([hlo.subtract(dim_value(m), one), order], cond, body)[1]
