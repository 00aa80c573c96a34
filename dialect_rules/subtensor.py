"""Indexing: Subtensor, IncSubtensor and the advanced forms, with numpy semantics.

Reads (`x[idx]`):
- Integers and slices known when lowering: one static `slice` (`reverse` first for
  negative steps).
- Run-time slice bounds (`x[:n]`, `x[a:b:c]`): numpy's clipping (`slice.indices`) is
  computed in the module, then `real_dynamic_slice` (static step) or a `gather` of the
  visited positions (run-time step, whose sign is unknown). The result dim stays `?`;
  the runtime specializes on the values of the 0-d integer inputs that feed it, one
  executable per distinct value. A bound computed from a non-scalar input (`x[:v[0]]`)
  cannot be specialized on and fails at call time.
- Run-time integer index: `dynamic_slice` (`dynamic_gather` where other dims are `?`),
  whose shape does not depend on the value. Along a `?` dim, which may be 0 (the index
  then raises IndexError, but the shapes must hold), the slice is min(1, n) long and
  padded to 1.
- Advanced indices (integer arrays, broadcast together; 0-d integers among them count
  as advanced, as in numpy): slices and newaxes first, then one `gather`. The advanced
  dims go where the first advanced index was, or in front when a slice or newaxis
  separates advanced indices (numpy's rule).
Writes (`set_subtensor`, `inc_subtensor`): basic indices give `dynamic_update_slice`
(unit steps) or a `scatter` over the visited positions; advanced indices give a
`scatter` whose combiner adds (`np.add.at`: repeated indices accumulate) or takes the
update (set). With repeated indices in a set, StableHLO leaves which update wins
unspecified: XLA's CPU backend applies them in order, so the last wins as in numpy; on
a GPU, where they race, each update is first replaced by the last one aimed at its
position (`set_indexed`). `ignore_duplicates` inc is a set of `x[idx] + y`, as numpy's
`x[idx] += y`. Index runs (`arange(k) + c`, or constants that are one) on two or
more adjacent axes write a diagonal: a `select` over the array instead (`_diagonal_write`),
which XLA fuses into its readers, so `alloc_diag`'s zeros are never built. Runs of a
length known only at run time (a pm.Data-sized `arange(n)`) take the select too where
their lengths trace to one dim, checked within their axes when called. The `inplace`
flags are ignored: XLA owns buffer reuse.

Boolean masks: a mask is its `nonzero()`, one integer index per mask axis, as in numpy.
A constant mask becomes those indices when lowering. A mask computed at run time lists
its True positions by a running count (each True element's rank among them, its slot);
their count is a size the program computes, which the runtime measures before
specializing (as for `unique`). set/inc with a mask that is the only advanced index need
no such size: a `select` of y broadcast (one value per masked row) or of y read at each
True element's rank (one value per True element, or a run-time count of 1 for all).

Out of range: numpy raises IndexError for an integer index (or array element) out of
range. XLA clamps gather/dynamic_slice/dynamic_update_slice starts into range and drops
scatter updates out of range, so each node's indices are checked in the module (one
flag per node) and the runtime raises IndexError at call time (from OpFromGraph bodies
too: their flags travel up to @main). Index arrays that are graph constants are wrapped
and checked when lowering (`_in_range_indices`), leaving no check against static sizes.
Inside region bodies (a Scan's loop) no check can be raised and XLA's behaviour stands:
a read takes the nearest valid index, an advanced write out of range is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

import numpy as np
import pytensor.scalar as ps
from jax.extend.mlir import ir
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.graph.basic import Constant
from pytensor.tensor.basic import ARange
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.subtensor import (
    AdvancedIncSubtensor,
    AdvancedIncSubtensor1,
    AdvancedSubtensor,
    AdvancedSubtensor1,
    IncSubtensor,
    Subtensor,
)
from pytensor.tensor.type_other import MakeSlice, NoneTypeT, SliceType

from lowering.builders import (
    Dim,
    all_of,
    broadcast_in_dim,
    broadcast_shapes,
    broadcast_to,
    compare,
    convert,
    dim_add,
    dim_min,
    dim_product,
    dim_sub,
    dim_size,
    dim_value,
    divide,
    dynamic_index,
    full,
    full_like,
    gather_dims,
    gather_indexed,
    ir_constant,
    is_static,
    iota,
    pad_zeros,
    remainder,
    reshape,
    result_type,
    slice_axis,
    select,
    shape_of,
    shape_tensor,
    splat,
    value_dtype,
    with_scratch,
)
from lowering.errors import UnsupportedParameterError
from lowering.graph import constant_int
from lowering.regions import any_true, cumulative, fold, scatter_indexed
from lowering.regions import scatter as scatter_region
from lowering.registry import register_batched, register_lowering
from lowering.types import static_shape

Bound = Union[int, ir.Value, None]


# --- index entries ---------------------------------------------------------------


@dataclass(frozen=True)
class _Slice:
    start: Bound = None
    stop: Bound = None
    step: Bound = None

    @property
    def full(self) -> bool:
        return self.start is None and self.stop is None and (self.step is None or _is(self.step, 1))


@dataclass(frozen=True)
class _Int:
    index: Union[int, ir.Value]


@dataclass(frozen=True)
class _Array:
    value: ir.Value  # i64 indices, or a boolean mask over `ndim` axes
    unsigned: bool = False
    mask: bool = False
    in_range: bool = False  # a mask's nonzero(): no check, no wrapping
    known: np.ndarray | None = field(default=None, compare=False)  # the values, from a graph constant
    mask_length: int | None = None  # a constant mask's nonzero(): that mask axis's length
    run: int | None = None  # the values are run, run + 1, ... (`_run_of`)

    @property
    def ndim(self) -> int:
        return len(static_shape(self.value.type))


_FULL = _Slice()
_NEW = "newaxis"


# No axis is longer than this: a step or bound past it acts as it does (and a uint64
# one past int64's range, or a step of +-2**63, stays exact in i64 arithmetic).
_HUGE = 2**62


def _bound(var, value) -> Bound:
    if value is None or (isinstance(var, Constant) and var.data is None):
        return None
    if isinstance(var, Constant):
        return int(var.data)
    if var.type.dtype == "uint64":
        value = hlo.minimum(value, ir_constant(np.uint64(_HUGE)))
    return convert(value, "int64")


def _basic_entries(idx_list, index_vars, values) -> list:
    """Subtensor's `idx_list`: each scalar Type and slice part takes the next input."""
    inputs = iter(zip(index_vars, values))

    def take():
        return _bound(*next(inputs))

    entries = []
    for entry in idx_list:
        if isinstance(entry, slice):
            parts = (entry.start, entry.stop, entry.step)
            entries.append(_Slice(*(None if p is None else take() for p in parts)))
        else:
            entries.append(_Int(take()))
    return entries


def _advanced_entries(ctx, node, index_vars, values) -> list:
    entries = []
    for var, value in zip(index_vars, values):
        if isinstance(var.type, NoneTypeT):
            entries.append(_NEW)
        elif isinstance(var.type, SliceType):
            entries.append(_slice_entry(node, var, value))
        elif var.type.dtype == "bool":
            if isinstance(var, Constant):
                entries += [
                    _Array(ctx.constant(nz.astype(np.int64)), known=nz, mask_length=length)
                    for nz, length in zip(np.nonzero(var.data), var.data.shape)
                ]
            else:
                entries.append(_Array(value, mask=True))
        else:
            entries.append(_integer_entry(var, value))
    return entries


def _integer_entry(var, value) -> _Array:
    """An integer index array; its values travel with it where the graph has them."""
    known = var.data if isinstance(var, Constant) else None
    return _Array(convert(value, "int64"), unsigned=var.type.dtype.startswith("u"), known=known, run=_run_of(var))


def _run_of(var) -> int | None:
    """start where the index vector `var` holds start, start + 1, ... (start >= 0) as the
    graph shows: a constant, or an `arange(start', n)` plus constants (`alloc_diag`'s
    and PyMC's diagonal writes)."""
    if var.type.ndim != 1 or var.type.dtype == "bool":
        return None
    if isinstance(var, Constant):
        data = np.asarray(var.data)
        if data.size == 0 or data[0] < 0 or not np.array_equal(data, data[0] + np.arange(data.size)):
            return None
        return int(data[0])
    node = var.owner
    if node is not None and isinstance(node.op, ARange):
        start, step = constant_int(node.inputs[0]), constant_int(node.inputs[2])
        return start if step == 1 and start is not None and start >= 0 else None
    if (node is not None and isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, ps.Add)
            and len(node.inputs) == 2 and var.type.dtype == "int64"):
        for vector, offset in (node.inputs, node.inputs[::-1]):
            if not all(offset.type.broadcastable):
                continue
            start, k = _run_of(vector), constant_int(offset)
            if start is not None and k is not None and start + k >= 0:
                return start + k
    return None


def _slice_entry(node, var, value) -> _Slice:
    if isinstance(var, Constant):
        s = var.data
        return _Slice(*(None if p is None else int(p) for p in (s.start, s.stop, s.step)))
    if var.owner is not None and isinstance(var.owner.op, MakeSlice):
        parts = (value.start, value.stop, value.step)
        return _Slice(*(_bound(v, p) for v, p in zip(var.owner.inputs, parts)))
    raise UnsupportedParameterError(node, f"a slice computed by {var.owner}", "only constant and MakeSlice slices")


@register_lowering(MakeSlice)
def lower_make_slice(ctx, node, *parts):
    # Not a tensor: the indexing rules read the parts (values, or None) from it.
    return slice(*parts)


# --- small integer arithmetic on Dims -------------------------------------------------


def _is(d, value) -> bool:
    """A Dim or bound known to equal `value` (run-time values never compare equal)."""
    return isinstance(d, int) and isinstance(value, int) and d == value


def _i64(v: int) -> ir.Value:
    return ir_constant(np.int64(v))


def _wrap(index: ir.Value, n: Dim) -> ir.Value:
    """numpy's negative indices: index + n where index < 0 (any shape)."""
    negative = compare(index, full_like(index, 0), "LT")
    return select(negative, hlo.add(index, splat(dim_value(n), index)), index)


def _raise_if(ctx, flags: list, error: type, message: str) -> None:
    """One call-time check for all of a node's flags (0-d i1 values)."""
    if not flags:
        return
    failed = flags[0]
    for flag in flags[1:]:
        failed = hlo.or_(failed, flag)
    if ctx.can_raise():
        ctx.runtime_check(failed, error, message)
    # else: a region body cannot raise; XLA's clamping/dropping stands (module docstring)


def _raise_out_of_range(ctx, flags: list) -> None:
    _raise_if(ctx, flags, IndexError, "index out of bounds")


def _in_range_indices(ctx, entry: _Array, n: Dim, flags: list) -> ir.Value:
    """numpy's wrapped indices of `entry` along an axis of size `n`, with an out-of-range
    flag appended where they may fall outside it.

    Indices known when lowering (a graph constant, as a PyMC model's group index) are
    wrapped and checked here: against a static size nothing is left for the module (a
    constant index out of range keeps the run-time check, so the call raises numpy's
    IndexError); against a run-time size, one scalar comparison of their maximum
    replaces the pass over all of them.
    """
    if entry.in_range:
        return entry.value
    data = entry.known
    if data is None:
        return checked_indices(entry.value, n, flags, entry.unsigned)
    if data.size == 0:
        return entry.value
    lo, hi = int(data.min()), int(data.max())
    if isinstance(n, int):
        if not -n <= lo <= hi < n:
            return checked_indices(entry.value, n, flags, entry.unsigned)
        if lo >= 0:
            return entry.value
        signed = data.astype(np.int64)
        return ctx.constant(np.where(signed < 0, signed + n, signed))
    if lo < 0 or hi > np.iinfo(np.int64).max:
        return checked_indices(entry.value, n, flags, entry.unsigned)
    flags.append(compare(_i64(hi), dim_value(n), "GE"))
    return entry.value


def checked_indices(index: ir.Value, n: Dim, flags: list, unsigned=False) -> ir.Value:
    """numpy's wrapped indices along an axis of size `n`; appends an out-of-range flag."""
    if not unsigned:
        index = _wrap(index, n)
    size = broadcast_in_dim(convert(dim_value(n), "uint64"), shape_of(index), [])
    flags.append(any_true(compare(convert(index, "uint64"), size, "GE")))  # negatives wrap high
    return index


# --- basic indexing: one _Range per axis ------------------------------------------------


@dataclass(frozen=True)
class _Range:
    """The positions start, start + step, ... (length of them) along one axis.

    `start` is 0 when length is 0; `drop`: an integer index (length 1, checked separately).
    """

    start: Dim
    length: Dim
    step: Union[int, ir.Value] = 1
    drop: bool = False
    whole: bool = False  # the whole axis, in order

    @property
    def runtime_index(self) -> bool:
        return self.drop and not isinstance(self.start, int)


def _ranges(ctx, x, entries, flags: list) -> list[_Range]:
    entries = list(entries) + [_FULL] * (len(static_shape(x.type)) - len(entries))
    ranges = []
    for axis, (entry, n) in enumerate(zip(entries, shape_of(x))):
        if isinstance(entry, _Int):
            ranges.append(_index_range(ctx, entry.index, n, axis, flags))
        elif entry.full:
            ranges.append(_Range(0, n, whole=True))
        else:
            ranges.append(_slice_range(ctx, entry, n))
    return ranges


def _index_range(ctx, index, n, axis, flags) -> _Range:
    if isinstance(index, int) and isinstance(n, int):
        if -n <= index < n:
            return _Range(index % n, 1, drop=True)
        if n == 0:
            raise IndexError(f"index {index} is out of bounds for axis {axis} with size 0")
        flags.append(ir_constant(np.True_))
        return _Range(0, 1, drop=True)
    return _Range(checked_indices(dim_value(index), n, flags), 1, drop=True)


def _slice_range(ctx, entry: _Slice, n: Dim) -> _Range:
    if _is(entry.step, 0):
        raise ValueError("slice step cannot be zero")
    step = entry.step
    if isinstance(step, int):
        step = max(-_HUGE, min(step, _HUGE))
    elif step is not None:
        step = hlo.clamp(_i64(-_HUGE), step, _i64(_HUGE))
    parts = (entry.start, entry.stop, step)
    if isinstance(n, int) and all(p is None or isinstance(p, int) for p in parts):
        start, stop, step = slice(*parts).indices(n)
        length = len(range(start, stop, step))
        return _Range(start if length else 0, length, step)
    step = 1 if step is None else step
    n = dim_value(n)
    zero, one = _i64(0), _i64(1)
    if isinstance(step, int):
        step_value = _i64(step)
        lower, upper = (_i64(-1), hlo.subtract(n, one)) if step < 0 else (zero, n)
        first, last = (upper, lower) if step < 0 else (lower, upper)
        round_up = _i64(step + 1 if step < 0 else step - 1)
    else:
        zero_step = compare(step, zero, "EQ")
        _raise_if(ctx, [zero_step], ValueError, "slice step cannot be zero")
        step = step_value = select(zero_step, one, step)  # keeps the shapes computable
        negative = compare(step, zero, "LT")
        lower = select(negative, _i64(-1), zero)
        upper = select(negative, hlo.subtract(n, one), n)
        first, last = select(negative, upper, lower), select(negative, lower, upper)
        round_up = hlo.subtract(step, select(negative, _i64(-1), one))

    def clip(bound, default):
        if bound is None:
            return default
        bound = dim_value(bound)
        return hlo.clamp(lower, _wrap(bound, n), upper)

    start, stop = clip(entry.start, first), clip(entry.stop, last)
    # numpy's length: max(0, ceil((stop - start) / step)), for either sign of step
    length = hlo.maximum(divide(hlo.add(hlo.subtract(stop, start), round_up), step_value), zero)
    start = select(compare(length, zero, "EQ"), zero, start)
    return _Range(start, length, step)


def _flip_negative_steps(x, ranges):
    """Reverse the axes with a static negative step; their ranges then step forwards."""
    axes = [i for i, r in enumerate(ranges) if isinstance(r.step, int) and r.step < 0]
    if not axes:
        return x, ranges, axes
    ranges = list(ranges)
    for i in axes:
        r, n = ranges[i], dim_size(x, i)
        if isinstance(r.start, int) and isinstance(r.length, int) and isinstance(n, int):
            start = n - 1 - r.start if r.length else 0
        else:
            empty = compare(dim_value(r.length), _i64(0), "EQ")
            start = select(empty, _i64(0), dim_value(dim_sub(dim_sub(n, 1), r.start)))
        ranges[i] = _Range(start, r.length, -r.step)
    return hlo.reverse(x, ir.DenseI64ArrayAttr.get(axes)), ranges, axes


def _limit(r: _Range) -> Dim:
    if isinstance(r.start, int) and isinstance(r.length, int):
        return r.start + (r.length - 1) * r.step + 1 if r.length else r.start
    start, length = dim_value(r.start), dim_value(r.length)
    span = hlo.add(hlo.multiply(hlo.subtract(length, _i64(1)), _i64(r.step)), _i64(1))
    return select(compare(length, _i64(0), "EQ"), start, hlo.add(start, span))


def _positions(r: _Range) -> ir.Value:
    """The 1-d i64 positions a range visits."""
    length = r.length
    steps = hlo.multiply(iota([length], 0, "int64"), broadcast_in_dim(dim_value(r.step), [length], []))
    return hlo.add(steps, broadcast_in_dim(dim_value(r.start), [length], []))


def _take(x, ranges):
    """x at the ranges; integer-indexed axes are kept with size 1."""
    x, ranges, _ = _flip_negative_steps(x, ranges)
    shape = shape_of(x)
    # 1. every range with a static step, except run-time integer indices: one slice
    sliced = [
        _Range(0, n, whole=True) if r.runtime_index or not isinstance(r.step, int) else r
        for r, n in zip(ranges, shape)
    ]
    x = _slice(x, sliced, shape)
    # 2. run-time integer indices: a static-size dynamic_slice, so no value specialization
    axes = [i for i, r in enumerate(ranges) if r.runtime_index]
    if axes:
        # A dim that may be 0 at run time, where no slice of 1 fits (the index then raises
        # IndexError, but the shapes must hold): slices of min(1, n), padded to 1.
        x = dynamic_index(x, axes, [ranges[i].start for i in axes], [dim_min(1, shape[i]) for i in axes])
        x = _padded_to_one(x, [i for i in axes if not isinstance(shape[i], int)])
    # 3. run-time steps (either sign): gather the visited positions
    for i, r in enumerate(ranges):
        if not isinstance(r.step, int):
            index = reshape(_positions(r), [r.length, 1])
            x = gather_indexed(x, [i], index, front=False)
    return x


def _padded_to_one(x, axes):
    """x, whose `axes` are 0 or 1 long, with each of them 1 long (a zero appended)."""
    if not axes:
        return x
    x = with_scratch(x, axes)
    shape = shape_of(x)
    return _slice(x, [_Range(0, 1) if i in axes else _Range(0, n, whole=True) for i, n in enumerate(shape)], shape)


def _slice(x, ranges, shape):
    if all(r.whole or (_is(r.start, 0) and _is(r.step, 1) and _is(r.length, n)) for r, n in zip(ranges, shape)):
        return x
    starts = [r.start for r in ranges]
    limits = [_limit(r) for r in ranges]
    strides = [r.step for r in ranges]
    if is_static(starts) and is_static(limits) and is_static(shape):
        attr = ir.DenseI64ArrayAttr.get
        return hlo.slice(x, attr(starts), attr(limits), attr(strides))
    out_type = result_type([r.length for r in ranges], value_dtype(x))
    return hlo.real_dynamic_slice(
        out_type, x, shape_tensor(starts), shape_tensor(limits), shape_tensor(strides)
    )


def _put(x, ranges, view):
    """x with the ranges replaced by `view` (shaped like `_take(x, ranges)`)."""
    x, ranges, flipped = _flip_negative_steps(x, ranges)
    batch = [i for i, r in enumerate(ranges) if not _is(r.step, 1)]
    for i, n in enumerate(shape_of(x)):
        if ranges[i].runtime_index and not isinstance(n, int):  # as in _take: n may be 0
            view = slice_axis(view, i, 0, dim_min(1, n))
    if not batch:
        out = hlo.dynamic_update_slice(x, view, [dim_value(r.start) for r in ranges])
    else:
        # Axes with other steps become scatter dims indexed by their positions; the
        # others are windows from their start.
        lengths = [ranges[i].length for i in batch]
        parts = []
        for i, r in enumerate(ranges):
            if i in batch:
                part = broadcast_in_dim(_positions(r), lengths, [batch.index(i)])
            else:
                part = broadcast_in_dim(dim_value(r.start), lengths, [])
            parts.append(reshape(part, [*lengths, 1]))
        index = hlo.concatenate(parts, len(batch))
        rank = len(ranges)
        dnums = hlo.ScatterDimensionNumbers.get(
            update_window_dims=[i for i in range(rank) if i not in batch],
            inserted_window_dims=batch, input_batching_dims=[], scatter_indices_batching_dims=[],
            scattered_dims_to_operand_dims=list(range(rank)), index_vector_dim=len(batch),
        )
        out = scatter_region(x, index, view, dnums, _take_update, unique_indices=True)
    return hlo.reverse(out, ir.DenseI64ArrayAttr.get(flipped)) if flipped else out


def _take_update(current, update):
    return update


def _add_combiner(current, update):
    if value_dtype(current) == "bool":
        return hlo.or_(current, update)  # numpy's bool add
    return hlo.add(current, update)


def _add(a, b):
    return _add_combiner(a, b)


def _output(node, x, drop=()):
    """Drop integer-indexed axes; take PyTensor's static dims where it knows them."""
    dims = [d for i, d in enumerate(shape_of(x)) if i not in drop]
    dims = [s if s is not None else d for s, d in zip(node.outputs[0].type.shape, dims)]
    if drop or result_type(dims, value_dtype(x)) != x.type:
        return reshape(x, dims)
    return x


def _update_value(node, y, dims, dtype):
    """y as numpy broadcasts it in `x[idx] = y`: cast to x's dtype, aligned on trailing dims."""
    y = convert(y, dtype)
    extra = len(static_shape(y.type)) - len(dims)
    if extra > 0:  # numpy drops leading 1s of y
        if any(d != 1 for d in static_shape(y.type)[:extra]):
            raise UnsupportedParameterError(node, "y with more dims than the indexed view")
        y = reshape(y, shape_of(y)[extra:])
    return broadcast_to(y, dims)


# --- rules: basic indexing ---------------------------------------------------------------


@register_lowering(Subtensor)
def lower_subtensor(ctx, node, x, *index_values):
    entries = _basic_entries(node.op.idx_list, node.inputs[1:], index_values)
    flags = []
    ranges = _ranges(ctx, x, entries, flags)
    _raise_out_of_range(ctx, flags)
    view = _take(x, ranges)
    return _output(node, view, [i for i, r in enumerate(ranges) if r.drop])


@register_lowering(IncSubtensor)
def lower_inc_subtensor(ctx, node, x, y, *index_values):
    entries = _basic_entries(node.op.idx_list, node.inputs[2:], index_values)
    flags = []
    ranges = _ranges(ctx, x, entries, flags)
    _raise_out_of_range(ctx, flags)
    dtype = node.outputs[0].type.dtype
    view_dims = [r.length for r in ranges if not r.drop]
    update = _update_value(node, y, view_dims, dtype)
    drop = any(r.drop for r in ranges)
    if not node.op.set_instead_of_inc:
        view = _take(x, ranges)
        update = _add(reshape(view, view_dims) if drop else view, update)
    if drop:  # integer-indexed axes back, as 1s
        update = reshape(update, [r.length for r in ranges])
    return _output(node, _put(x, ranges, update))


# --- advanced indexing ---------------------------------------------------------------------


@dataclass
class _Plan:
    """An advanced index, normalized: x with newaxes inserted, the basic part as ranges
    (advanced axes full), and the advanced arrays with the axes they index."""

    x: ir.Value
    ranges: list
    arrays: list  # (_Array, first axis)
    front: bool  # advanced dims go first (advanced indices separated by a slice/newaxis)
    expanded: bool


def _plan(ctx, x, entries) -> _Plan:
    dims, layout, axis = [], [], 0
    shape = shape_of(x)
    for entry in entries:
        if entry is _NEW:
            layout.append((_FULL, len(dims)))
            dims.append(1)
            continue
        k = entry.ndim if isinstance(entry, _Array) and entry.mask else 1
        layout.append((entry, len(dims)))
        dims += shape[axis:axis + k]
        axis += k
    layout += [(_FULL, len(dims) + j) for j in range(len(shape) - axis)]
    dims += shape[axis:]
    expanded = len(dims) != len(shape)
    if expanded:
        x = reshape(x, dims)
    basic = [_FULL] * len(dims)
    for entry, a in layout:
        if isinstance(entry, _Slice):
            basic[a] = entry
    advanced = [j for j, (entry, _) in enumerate(layout) if isinstance(entry, _Array)]
    front = bool(advanced) and advanced != list(range(advanced[0], advanced[-1] + 1))
    trivial = all(isinstance(e, _Slice) and e.full for e in basic)
    ranges = None if trivial else _ranges(ctx, x, basic, [])
    return _Plan(x, ranges, [layout[j] for j in advanced], front, expanded)


def _index_tensor(ctx, view, plan) -> tuple[ir.Value, list[int]]:
    """The advanced arrays, checked and broadcast together, stacked on a last axis."""
    axes = [a for _, a in plan.arrays]
    flags = []
    arrays = [_in_range_indices(ctx, e, dim_size(view, a), flags) for e, a in plan.arrays]
    _raise_out_of_range(ctx, flags)
    if len(arrays) == 1:
        return reshape(arrays[0], [*shape_of(arrays[0]), 1]), axes
    batch = broadcast_shapes(*(shape_of(a) for a in arrays))
    parts = [reshape(broadcast_to(a, batch), [*batch, 1]) for a in arrays]
    return hlo.concatenate(parts, len(batch)), axes


@register_lowering(AdvancedSubtensor1)
def lower_advanced_subtensor1(ctx, node, x, indices):
    return _advanced_read(ctx, node, x, [_integer_entry(node.inputs[1], indices)])


@register_lowering(AdvancedSubtensor)
def lower_advanced_subtensor(ctx, node, x, *index_values):
    return _advanced_read(ctx, node, x, _advanced_entries(ctx, node, node.inputs[1:], index_values))


@register_batched(AdvancedSubtensor)
def lower_batched_advanced_subtensor(ctx, node, batch_ndim, x, *index_values):
    """Blockwise(AdvancedSubtensor) (`b[perm]` per batch entry, as in a batched lu_solve):
    the batch positions become leading integer index arrays, x[i_0, ..., idx...], so one
    gather serves the whole batch. Blockwise inputs are tensors, so every index is an
    array and all are adjacent: numpy keeps their dims first, the batch dims leading."""
    entries = _advanced_entries(ctx, node, node.inputs[1:], index_values)
    depth = max(e.ndim for e in entries) - batch_ndim
    batch = list(shape_of(x))[:batch_ndim]
    # Core index dims broadcast among themselves right-aligned, after the batch dims.
    entries = [
        e if not isinstance(e, _Array) or e.mask or e.ndim - batch_ndim == depth else _Array(
            reshape(e.value, [*batch, *[1] * (depth - e.ndim + batch_ndim), *list(shape_of(e.value))[batch_ndim:]]),
            e.unsigned,
        )
        for e in entries
    ]
    positions = [_Array(iota(batch + [1] * depth, d, "int64"), in_range=True) for d in range(batch_ndim)]
    return _advanced_read(ctx, node, x, positions + entries)


def _true_ranks(flat_mask: ir.Value) -> tuple[ir.Value, ir.Value]:
    """Each element's rank among the True elements of a 1-d mask (the number of Trues
    before it; a running count, O(n)), and the True count (0-d i64)."""
    counts = cumulative(convert(flat_mask, "int64"), 0, hlo.add, 0)
    return hlo.subtract(counts, full_like(counts, 1)), fold(convert(flat_mask, "int64"), [0], hlo.add, 0)


def nonzero(x: ir.Value) -> list[ir.Value]:
    """np.nonzero(x): per axis, the i64 coordinates of the nonzero elements in C order.
    Their length is computed by the program (measured by the runtime before it
    specializes, `specialize.runtime_dims`)."""
    shape = shape_of(x)
    flat = reshape(x, [dim_product(shape)])
    if value_dtype(flat) != "bool":
        flat = compare(flat, full_like(flat, 0), "NE")  # NaN counts, as in numpy
    ranks, count = _true_ranks(flat)
    # Each True element's position to the slot of its rank; the others to a slot past
    # the end, where scatter drops them.
    size = dim_size(flat, 0)
    positions = iota([size], 0, "int64")
    slots = select(flat, ranks, splat(dim_value(size), ranks))
    position = scatter_indexed(full(0, [size], "int64"), [0], reshape(slots, [size, 1]), positions, False, _take_update)
    position = slice_axis(position, 0, 0, count)
    coordinates = []
    for d in reversed(shape[1:]):
        n = splat(dim_value(d), position)
        coordinates.append(remainder(position, n))
        position = divide(position, n)
    return [position, *reversed(coordinates)]


def _masks_as_indices(entries) -> list:
    """Each run-time boolean mask replaced by its nonzero() indices."""
    out = []
    for e in entries:
        if isinstance(e, _Array) and e.mask:
            out += [_Array(c, in_range=True) for c in nonzero(e.value)]
        else:
            out.append(e)
    return out


def _check_masks(ctx, node, x, entries) -> None:
    """numpy's IndexError where a mask's shape differs from the dims it covers (its
    nonzero() would otherwise read inside x, as a short constant mask padded with False)."""
    shape, axis, flags = shape_of(x), 0, []
    for e in entries:
        if e is _NEW:
            continue
        if isinstance(e, _Array) and e.mask_length is not None:
            if not _is(shape[axis], e.mask_length):
                flags.append(compare(_i64(e.mask_length), dim_value(shape[axis]), "NE"))
            axis += 1
        elif isinstance(e, _Array) and e.mask:
            if e.ndim == 0:
                raise UnsupportedParameterError(node, "a 0-d boolean index computed at run time")
            for j, d in enumerate(shape_of(e.value)):
                flags.append(compare(dim_value(d), dim_value(shape[axis + j]), "NE"))
            axis += e.ndim
        else:
            axis += 1
    _raise_if(ctx, flags, IndexError, "boolean index did not match indexed array")


def _advanced_read(ctx, node, x, entries):
    _check_masks(ctx, node, x, entries)
    plan = _plan(ctx, x, _masks_as_indices(entries))
    view = plan.x if plan.ranges is None else _take(plan.x, plan.ranges)
    if plan.arrays:
        index, axes = _index_tensor(ctx, view, plan)
        view = gather_indexed(view, axes, index, plan.front)
    return _output(node, view)


@register_lowering(AdvancedIncSubtensor1)
def lower_advanced_inc_subtensor1(ctx, node, x, y, indices):
    _refuse_runtime_broadcasting(ctx, node, x, y, indices)
    return _advanced_write(ctx, node, x, y, [_integer_entry(node.inputs[2], indices)])


def _refuse_runtime_broadcasting(ctx, node, x, y, indices) -> None:
    """AdvancedIncSubtensor1 does not broadcast y along a dim its type leaves unknown:
    where such a dim of y has length 1 at run time and `x[indices]`'s dim against it
    (the number of indices, then x's dims after the first, aligned from the right) does
    not, the call raises PyTensor's ValueError. (PyTensor's perform also compares y's
    first dim with x's first, so it refuses `x[[i]] += y` for a y of one row; that
    increments the row here, as numpy does.)"""
    targets = [shape_of(indices)[0], *shape_of(x)[1:]]
    flags = []
    dims = zip(shape_of(y), static_shape(y.type), node.inputs[1].broadcastable, strict=True)
    for (d, known, broadcastable), target in zip(reversed(list(dims)), reversed(targets)):
        if known is None and not broadcastable and not (isinstance(target, int) and target == 1):
            one = dim_value(1)
            flags.append(hlo.and_(compare(dim_value(d), one, "EQ"), compare(dim_value(target), one, "NE")))
    _raise_if(ctx, flags, ValueError, AdvancedIncSubtensor1._runtime_broadcast_error_msg)


@register_lowering(AdvancedIncSubtensor)
def lower_advanced_inc_subtensor(ctx, node, x, y, *index_values):
    return _advanced_write(ctx, node, x, y, _advanced_entries(ctx, node, node.inputs[2:], index_values))


def _advanced_write(ctx, node, x, y, entries):
    source = _masked_copy_source(ctx, node)
    if source is not None:  # x[m] = s[m] (or +=): no compaction, which a loop body cannot size
        dtype = node.outputs[0].type.dtype
        mask, source = entries[0].value, convert(source, dtype)
        if node.op.set_instead_of_inc:
            return _output(node, select(mask, source, convert(x, dtype)))
        return _output(node, _add(convert(x, dtype), select(mask, source, full_like(source, 0))))
    _check_masks(ctx, node, x, entries)
    op = node.op
    dtype = node.outputs[0].type.dtype
    plan = _plan(ctx, x, entries)
    view = plan.x if plan.ranges is None else _take(plan.x, plan.ranges)
    masks = [(e, a) for e, a in plan.arrays if e.mask]
    if masks and len(plan.arrays) > 1:  # with other advanced indices: as their indices
        return _advanced_write(ctx, node, x, y, _masks_as_indices(entries))
    if masks:
        (mask, axis), = masks
        view = _masked_write(ctx, node, view, mask.value, axis, y, dtype)
    elif _is_diagonal(ctx, view, plan):
        view = _diagonal_write(ctx, node, view, plan, y, dtype)
    elif plan.arrays:
        index, axes = _index_tensor(ctx, view, plan)
        batch = list(shape_of(index))[:-1]
        out_dims, _ = gather_dims(view, axes, batch, plan.front)
        update = _update_value(node, y, out_dims, dtype)
        if op.set_instead_of_inc:
            view = set_indexed(ctx, view, axes, index, update, plan.front)
        elif getattr(op, "ignore_duplicates", False):
            update = _add(gather_indexed(view, axes, index, plan.front), update)
            view = set_indexed(ctx, view, axes, index, update, plan.front)
        else:
            view = scatter_indexed(view, axes, index, update, plan.front, _add_combiner)
    else:  # only slices and newaxes
        update = _update_value(node, y, shape_of(view), dtype)
        view = update if op.set_instead_of_inc else _add(view, update)
    out = view if plan.ranges is None else _put(plan.x, plan.ranges, view)
    if plan.expanded:
        out = reshape(out, shape_of(x))
    return _output(node, out)


def _is_diagonal(ctx, view, plan) -> bool:
    """Two or more advanced indices, runs of one length (as the module traces it: equal
    static lengths, one index array `x[i, i] = v`, or runs of one arange, as `alloc_diag`
    and PyMC's diagonals of a data-sized matrix) on adjacent axes: they write one
    diagonal of those axes, each position once. Runs known to lie within their axes take
    it anywhere; where a length or an axis is known only at run time, `_diagonal_write`
    checks them when called, which only a module's top level can raise. Runs known to
    leave their axes take the scatter, whose check raises."""
    entries = [e for e, _ in plan.arrays]
    if plan.front or len(entries) < 2 or any(e.run is None for e in entries):
        return False
    lengths = [dim_size(e.value, 0) for e in entries]
    if any(n != lengths[0] for n in lengths):
        return False
    shape = shape_of(view)
    ends = [(dim_add(lengths[0], e.run), shape[a]) for e, a in plan.arrays]
    known = [isinstance(end, int) and isinstance(size, int) for end, size in ends]
    if any(k and end > size for k, (end, size) in zip(known, ends)):
        return False
    return all(known) or ctx.can_raise()


def _diagonal_write(ctx, node, view, plan, y, dtype):
    """view[c0 + i, c1 + i, ...] = y[i] (or += y[i]) as a select over the view: where the
    positions p0, p1, ... of the indexed axes have p0 - c0 == p1 - c1 == ... in
    [0, length), y at p0 - c0. No scatter and no copy of the view: XLA fuses the
    select into its readers, and a diagonal written into zeros (`alloc_diag`, the
    diagonal of a gradient) is never built. A run that may leave its axis raises
    IndexError when called, as the scatter's bounds check does."""
    axes = [a for _, a in plan.arrays]
    starts = [e.run for e, _ in plan.arrays]
    shape = shape_of(view)
    length = dim_size(plan.arrays[0][0].value, 0)
    _raise_out_of_range(ctx, [
        compare(dim_value(dim_add(length, start)), dim_value(shape[a]), "GT")
        for start, a in zip(starts, axes)
        if not (isinstance(length, int) and isinstance(shape[a], int))
    ])
    first, after = axes[0], axes[-1] + 1
    update = _update_value(node, y, [*shape[:first], length, *shape[after:]], dtype)
    rank = first + 1 + len(shape) - after
    low, high = [0] * rank, [0] * rank
    low[first], high[first] = starts[0], dim_sub(dim_sub(shape[first], starts[0]), length)
    update = pad_zeros(update, low, high)
    update = broadcast_in_dim(update, shape, [*range(first + 1), *range(after, len(shape))])
    grid = [shape[a] for a in axes]
    p0 = iota(grid, 0, "int64")
    end = splat(dim_value(dim_add(length, starts[0])), p0)
    on = [compare(p0, full_like(p0, starts[0]), "GE"), compare(p0, end, "LT")]
    for j, start in enumerate(starts[1:], 1):
        offset = hlo.subtract(iota(grid, j, "int64"), p0)
        on.append(compare(offset, full_like(offset, start - starts[0]), "EQ"))
    if not node.op.set_instead_of_inc:
        update = _add(view, update)
    return select(broadcast_in_dim(all_of(*on), shape, axes), update, view)


def set_indexed(ctx, view, axes, index, update, front):
    """view[index] = update, the last of repeated positions winning, as in numpy.

    XLA's CPU backend applies a scatter's updates in order. On a GPU they race, so there
    each update is first replaced by the last one aimed at its position: the writes
    that race are then equal, and which of them lands last no longer matters."""
    if ctx.on_gpu:
        update = _last_update_per_position(view, axes, index, update, front)
    return scatter_indexed(view, axes, index, update, front, _take_update)


def _last_update_per_position(view, axes, index, update, front):
    """`update` (shaped like `gather_indexed(view, axes, index, front)`) with each
    update's row replaced by that of the last update aimed at the same position: a
    scatter-max of update numbers, whose result does not depend on the order."""
    batch = list(shape_of(index))[:-1]
    count = dim_product(batch)
    numbers = reshape(iota([count], 0, "int64"), batch)
    positions = list(range(len(axes)))
    owner = full(-1, [shape_of(view)[a] for a in axes], "int64")
    owner = scatter_indexed(owner, positions, index, numbers, True, hlo.maximum)
    last = gather_indexed(owner, positions, index, True)
    dims, _ = gather_dims(view, axes, batch, front)
    at = 0 if front else axes[0]
    rows = reshape(update, [*dims[:at], count, *dims[at + len(batch):]])
    rows = gather_indexed(rows, [at], reshape(last, [count, 1]), front=False)
    return reshape(rows, dims)


def whole_mask_selection(var):
    """(s, m) where `var` is s[m] with m one boolean mask over all of s, else None: the
    compaction whose size only the mask's values give. Rules that consume it whole
    (`x[m] = s[m]`, reductions) can use m elementwise instead, which needs no size, as
    a loop body cannot know one (PyMC's rejection loops)."""
    if var.owner is None or not isinstance(var.owner.op, AdvancedSubtensor):
        return None
    source, *indices = var.owner.inputs
    if len(indices) != 1 or indices[0].type.dtype != "bool" or indices[0].type.ndim != source.type.ndim:
        return None
    return source, indices[0]


def _masked_copy_source(ctx, node):
    """s's value where the node writes `s[m]` through its own mask m (`x[m] = s[m]`),
    s and x of one shape: then the write is a select, and s[m] is dead code. Shapes
    that differ at run time fail as the call is specialized (numpy: IndexError)."""
    x, y, *indices = node.inputs
    selection = whole_mask_selection(y)
    if selection is None or [selection[1]] != indices:
        return None
    source = selection[0]
    if source.type.ndim != x.type.ndim or any(a is not None and b is not None and a != b
                                              for a, b in zip(source.type.shape, x.type.shape)):
        return None
    return ctx.envs[-1].get(source)


def _masked_write(ctx, node, view, mask, axis, y, dtype):
    """view[mask] = y (or += y) for a boolean `mask` over axes axis..axis+mask.ndim."""
    shape = list(shape_of(view))
    k = len(static_shape(mask.type))
    before, masked, after = shape[:axis], shape[axis:axis + k], shape[axis + k:]
    y = convert(y, dtype)
    y_shape = static_shape(y.type)
    pad = axis + 1 + len(after) - len(y_shape)
    y_count = 1 if pad > axis else y_shape[axis - pad]
    inc = not node.op.set_instead_of_inc
    if y_count == 1:
        # One value per masked row: broadcast y over the masked axes and select.
        dims = [*before, 1, *after]
        y = reshape(broadcast_to(y, dims), [*before, *[1] * k, *after])
        y = broadcast_in_dim(y, shape, range(len(shape)))
        new = _add(view, y) if inc else y
        return select(broadcast_in_dim(mask, shape, range(axis, axis + k)), new, view)
    # One value per True element, in order (or one for all where y's count is 1 at run
    # time, as numpy broadcasts it): each True position reads y at its rank among them.
    size = dim_product(masked)
    flat_shape = [*before, size, *after]
    flat_view = reshape(view, flat_shape)
    flat_mask = reshape(mask, [size])
    rank, trues = _true_ranks(flat_mask)
    count = dim_size(y, len(y_shape) - 1 - len(after))
    one = _i64(1)
    _raise_if(ctx, [hlo.and_(compare(trues, dim_value(count), "NE"), compare(dim_value(count), one, "NE"))],
              ValueError, "boolean index assignment: the number of values does not match the mask's True count")
    last = hlo.maximum(hlo.subtract(dim_value(count), one), _i64(0))
    rank = hlo.clamp(_i64(0), rank, splat(last, rank))  # a count of 1: every position reads y's one
    taken = gather_indexed(broadcast_to(y, [*before, count, *after]), [axis], reshape(rank, [size, 1]), front=False)
    new = _add(flat_view, taken) if inc else taken
    return reshape(select(broadcast_in_dim(flat_mask, flat_shape, [axis]), new, flat_view), shape)
