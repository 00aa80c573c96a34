"""Region ops, built the same five steps every time: create the op with its result
types, append a block, enter it, lower the body, `stablehlo.return`."""

from __future__ import annotations

import contextlib
import functools
from contextvars import ContextVar
from typing import Callable, Sequence

import numpy as np
from jax.extend.mlir import ir
from jax.extend.mlir.dialects import stablehlo as hlo

from lowering.builders import (
    Dim,
    broadcast_in_dim,
    cast_shape,
    compare,
    convert,
    dim_add,
    dim_max,
    dim_product,
    dim_quotient,
    dim_sub,
    dim_value,
    dynamic_index,
    full,
    full_like,
    gather_dims,
    gather_indexed,
    iota,
    ir_constant,
    pad_end,
    read_entry,
    reshape,
    result_type,
    select,
    shape_of,
    slice_axis,
    splat,
    transpose,
    value_dtype,
    with_static_dims,
    write_entry,
)
from lowering.types import static_shape, tensor_type


def reduce(
    operands: Sequence[ir.Value],
    inits: Sequence[ir.Value],
    axes: Sequence[int],
    body: Callable[[list[ir.Value], list[ir.Value]], Sequence[ir.Value]],
) -> list[ir.Value]:
    """`stablehlo.reduce` of `operands` over `axes`; `body(accumulators, elements)`. Over
    at most _UNROLLED_REDUCE_MAX static elements, the same combines written out
    (`_unrolled`): `body` then gets tensors of the kept dims."""
    axes = sorted(axes)
    sizes = [static_shape(operands[0].type)[a] for a in axes]
    if axes and None not in sizes and 0 < int(np.prod(sizes)) <= _UNROLLED_REDUCE_MAX:
        return _unrolled(operands, inits, axes, sizes, body)
    dims = [d for i, d in enumerate(shape_of(operands[0])) if i not in axes]
    dtypes = [value_dtype(v) for v in inits]
    op = hlo.ReduceOp(
        [result_type(dims, dt) for dt in dtypes], list(operands), list(inits),
        ir.DenseI64ArrayAttr.get(axes),
    )
    scalars = [tensor_type((), dt) for dt in dtypes]
    block = op.body.blocks.append(*scalars, *scalars)
    with ir.InsertionPoint(block):
        args = list(block.arguments)
        hlo.return_(list(body(args[: len(inits)], args[len(inits):])))
    return list(op.results)


# Reduced axes of at most this many elements in all (static) are combined slice by slice,
# in order from the inits: elementwise ops, which XLA fuses with the ops that make and read
# them, where a reduce is a kernel of its own. numpy adds fewer than 8 elements one by one
# too. The logsumexp over 2 or 3 components of a zero-inflated Poisson or a normal mixture
# took 8-11% less time a call; no benchmark model's time grew (nor with 32).
_UNROLLED_REDUCE_MAX = 7


def _unrolled(operands, inits, axes, sizes, body) -> list[ir.Value]:
    """`reduce` as a chain of `body` over the slices at each index of `axes` (C order)."""
    dims = shape_of(operands[0])
    kept = [d for i, d in enumerate(dims) if i not in axes]

    # A float init goes behind a barrier: the folders drop `0.0 + x`, where numpy's sum of
    # -0.0s is +0.0.
    def start(init):
        return hlo.optimization_barrier([init]) if np.dtype(value_dtype(init)).kind in "fc" else init

    accs = [broadcast_in_dim(start(init), kept, []) for init in inits]
    for index in np.ndindex(*sizes):
        elements = []
        for x in operands:
            for axis, i in zip(axes, index, strict=True):
                x = slice_axis(x, axis, i, i + 1)
            elements.append(reshape(x, kept))
        accs = list(body(accs, elements))
    return accs


def identity_value(scalar_op, dtype) -> object | None:
    """The identity of an associative scalar op in `dtype` (the reduce init), or None."""
    import pytensor.scalar as ps
    from pytensor.tensor.math import MulWithoutZeros

    dtype = np.dtype(dtype)
    # MulWithoutZeros(0, y) is y: its identity is 0, which keeps an all-zero product 0.
    if isinstance(scalar_op, (ps.Add, ps.OR, ps.XOR, MulWithoutZeros)):
        return dtype.type(0)
    if isinstance(scalar_op, ps.Mul):
        return dtype.type(1)
    if isinstance(scalar_op, ps.AND):  # all bits set
        return np.True_ if dtype == np.bool_ else _highest(dtype) if dtype.kind == "u" else dtype.type(-1)
    if isinstance(scalar_op, ps.ScalarMaximum):
        return _lowest(dtype)
    if isinstance(scalar_op, ps.ScalarMinimum):
        return _highest(dtype)
    return None


def _lowest(dtype: np.dtype):
    """The least value of `dtype` (complex: in numpy's lexicographic order)."""
    if dtype == np.bool_:
        return np.False_
    if dtype.kind == "f":
        return dtype.type(-np.inf)
    if dtype.kind == "c":
        return dtype.type(complex(-np.inf, -np.inf))
    return np.iinfo(dtype).min


def _highest(dtype: np.dtype):
    if dtype == np.bool_:
        return np.True_
    if dtype.kind == "f":
        return dtype.type(np.inf)
    if dtype.kind == "c":
        return dtype.type(complex(np.inf, np.inf))
    return np.iinfo(dtype).max


def scatter(
    operand: ir.Value,
    indices: ir.Value,
    updates: ir.Value,
    dimension_numbers,
    combine: Callable[[ir.Value, ir.Value], ir.Value],
    *,
    unique_indices: bool = False,
) -> ir.Value:
    """`stablehlo.scatter`; `combine(current, update)` is the new element (0-d values)."""
    op = hlo.ScatterOp(
        [operand.type], [operand], indices, [updates], dimension_numbers,
        indices_are_sorted=False, unique_indices=unique_indices,
    )
    scalar = tensor_type((), value_dtype(operand))
    block = op.update_computation.blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        hlo.return_([combine(block.arguments[0], block.arguments[1])])
    return op.results[0]


def sort(
    operands: Sequence[ir.Value],
    dimension: int,
    less: Callable[[list[ir.Value], list[ir.Value]], ir.Value],
    *,
    stable: bool = True,
) -> list[ir.Value]:
    """`stablehlo.sort` of `operands` along `dimension`; `less(lhs, rhs)` gets one 0-d
    value per operand on each side and returns a 0-d i1."""
    op = hlo.SortOp([v.type for v in operands], list(operands), dimension=dimension, is_stable=stable)
    scalars = [tensor_type((), value_dtype(v)) for v in operands]
    block = op.comparator.blocks.append(*[t for t in scalars for _ in (0, 1)])
    with ir.InsertionPoint(block):
        args = list(block.arguments)
        hlo.return_([less(args[0::2], args[1::2])])
    return list(op.results)


def fold(x: ir.Value, axes: Sequence[int], combine: Callable, init) -> ir.Value:
    """`x` reduced over `axes` with the binary builder `combine` (hlo.add, hlo.maximum,
    hlo.or_, ...), starting from the scalar `init` in x's dtype. A float maximum or
    minimum keeps NaN (`_keeping_nan`)."""
    dtype = value_dtype(x)
    if combine in _EXTREMA and np.dtype(dtype).kind == "f":
        combine = _keeping_nan(combine)
    init = full(init, (), dtype)
    return reduce([x], [init], axes, lambda acc, el: [combine(acc[0], el[0])])[0]


_EXTREMA = {hlo.maximum: "GT", hlo.minimum: "LT"}


def _keeping_nan(combine: Callable) -> Callable:
    """hlo.maximum or hlo.minimum as a reduce body that keeps NaN, as numpy does. XLA's
    CPU client vectorizes a reduce whose body is `stablehlo.maximum` with instructions
    that drop NaN (jaxlib 0.10.2: the max of 4,096 or more float64s, one of them NaN, is
    a number; jax's own jnp.max too). A compare and select is reduced as written."""
    direction = _EXTREMA[combine]

    def body(a, b):
        return select(hlo.or_(compare(a, b, direction), compare(a, a, "NE")), a, b)

    return body


def any_true(mask: ir.Value) -> ir.Value:
    """0-d i1: whether any element of the boolean `mask` holds."""
    rank = len(ir.RankedTensorType(mask.type).shape)
    return mask if rank == 0 else fold(mask, range(rank), hlo.or_, False)


def reduce_window(
    operand: ir.Value,
    init: ir.Value,
    window: Sequence[int],
    padding: Sequence[tuple[int, int]],
    body: Callable[[ir.Value, ir.Value], ir.Value],
) -> ir.Value:
    """`stablehlo.reduce_window` with unit strides; `body(accumulator, element)`.

    Window sizes are attributes, so the operand's dims must be static where the window
    is larger than 1.
    """
    dims = [
        d if w == 1 and lo == hi == 0 else int(d) + lo + hi - w + 1
        for d, w, (lo, hi) in zip(shape_of(operand), window, padding)
    ]
    dtype = value_dtype(operand)
    pad = ir.DenseIntElementsAttr.get(
        np.asarray(padding, dtype=np.int64).reshape(len(window), 2),
        type=ir.RankedTensorType.get([len(window), 2], ir.IntegerType.get_signless(64)),
    )
    op = hlo.ReduceWindowOp(
        [result_type(dims, dtype)], [operand], [init], ir.DenseI64ArrayAttr.get(list(window)),
        padding=pad,
    )
    scalar = tensor_type((), dtype)
    block = op.body.blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        hlo.return_([body(block.arguments[0], block.arguments[1])])
    return op.results[0]


def while_loop(
    init: Sequence[ir.Value],
    cond: Callable[[list[ir.Value]], ir.Value],
    body: Callable[[list[ir.Value]], Sequence[ir.Value]],
) -> list[ir.Value]:
    """`stablehlo.while`: `cond(values)` is a 0-d i1, `body(values)` the next values
    (same types as `init`)."""
    types = [v.type for v in init]
    op = hlo.WhileOp(types, list(init))
    block = op.cond.blocks.append(*types)
    with ir.InsertionPoint(block):
        hlo.return_([cond(list(block.arguments))])
    block = op.body.blocks.append(*types)
    with ir.InsertionPoint(block):
        hlo.return_(list(body(list(block.arguments))))
    return list(op.results)


def row_count(n: Dim, lanes: int) -> Dim:
    """Rows of `lanes` that hold n elements."""
    return dim_quotient(dim_add(n, lanes - 1), lanes)


def rows_of(x: ir.Value, rows: Dim, lanes: int) -> ir.Value:
    """A flat tensor padded (with zeros) to rows * lanes elements, as (rows, lanes)."""
    width = dim_product([rows, lanes])
    return reshape(pad_end(x, [dim_sub(width, shape_of(x)[0])]), [rows, lanes])


def each_row(n: Dim, rows_in: Sequence[ir.Value], rows_out: Sequence[ir.Value], run, lanes: int) -> list[ir.Value]:
    """Loop over the rows (of `lanes` elements) of flat tensors of n elements:
    `run(i, inputs, outputs)` maps row i of `rows_in` (read only) and of `rows_out` to
    the new rows of `rows_out`; the flat results."""
    rows = row_count(n, lanes)
    # A run-time count of rows may be 0, where reading row i would not be valid IR: one
    # more row, never read (as `with_scratch` does).
    held = rows if isinstance(rows, int) else dim_add(rows, 1)
    fixed = [rows_of(x, held, lanes) for x in rows_in]
    state = [rows_of(x, held, lanes) for x in rows_out]

    def body(values):
        i, *state = values
        row = run(i, [read_entry(x, [i]) for x in fixed], [read_entry(x, [i]) for x in state])
        written = [write_entry(x, y, [i]) for x, y in zip(state, row, strict=True)]
        return [hlo.add(i, ir_constant(np.int64(1))), *written]

    last = dim_value(rows)
    done = while_loop([ir_constant(np.int64(0)), *state], lambda values: compare(values[0], last, "LT"), body)[1:]
    return [slice_axis(reshape(x, [dim_product([held, lanes])]), 0, 0, n) for x in done]


def in_loop_body(top: ir.Operation | None = None) -> bool:
    """Whether ops built now land in a while loop's body or condition, at any depth (up to
    `top`, a loop not counted, where given)."""
    op = ir.InsertionPoint.current.block.owner.operation
    while op is not None and op.name != "func.func":
        if top is not None and op == top:
            return False
        if op.name == "stablehlo.while":
            return True
        op = op.parent
    return False


def in_loop_once(compute: Callable[[], Sequence[ir.Value]], like: Sequence[ir.Value]) -> list[ir.Value]:
    """`compute()`'s values (of the types of `like`, which the loop starts from), built in
    the body of a loop that runs once: its condition is a flag the body clears, which XLA
    keeps, and XLA:CPU writes a loop's results to memory rather than fusing them into
    their readers' kernels, where each kernel would compute them again. Values from
    outside the body that `compute` reads come in as its operands (written out first,
    too). Returns the loop's results: the flag, then the values."""
    def body(values):
        return [ir_constant(np.False_), *compute()]

    return while_loop([ir_constant(np.True_), *like], lambda values: values[0], body)


def computed_once(op, init: ir.Value) -> ir.Value:
    """The result of `op` (one result, no regions) from the op built again `in_loop_once`,
    so the kernels that read it load one computed value. `init`: a value of the result's
    type for the loop to start from (the op's operand, for an elementwise op: nothing is
    computed for it)."""
    op = op.operation

    def again():
        return ir.Operation.create(
            op.name, results=[r.type for r in op.results], operands=list(op.operands),
            attributes={name: op.attributes[name] for name in op.attributes},
        ).results[:1]

    return in_loop_once(again, [init])[1]


def converge(
    init: Sequence[ir.Value],
    active: ir.Value,
    step: Callable[[list[ir.Value]], tuple[Sequence[ir.Value], ir.Value]],
    max_steps: int,
) -> list[ir.Value]:
    """Iterate `step(state) -> (next state, done)` elementwise on whole tensors until
    every `active` element is done, or `max_steps`: an element keeps the state of the
    step that finished it (series summed until their terms vanish)."""
    return _converging(ir_constant(np.int64(0)), active, list(init), lambda state, i: step(state), max_steps, 0)[2:]


def _converging(i, still, state, step, max_steps: int, limit: Dim) -> list[ir.Value]:
    """`converge`'s loop from step count `i`, the elements of `still` going, until at most
    `limit` of them are (or step `max_steps`): [i, still, *state] after it."""
    def cond(values):
        i, still = values[0], values[1]
        more = hlo.compare(i, ir_constant(np.int64(max_steps)), hlo.ComparisonDirectionAttr.get("LT"))
        return hlo.and_(more, more_than(still, limit))

    def body(values):
        i, still, *state = values
        new, done = step(state, i)
        state = [select(still, n, s) for n, s in zip(new, state, strict=True)]
        return [hlo.add(i, ir_constant(np.int64(1))), hlo.and_(still, hlo.not_(done)), *state]

    return while_loop([i, still, *state], cond, body)


# `converge_compacting`'s levels: a loop over n elements runs over all of them until at most
# m = n / CONVERGE_COMPACT_RATIO are going, then over m, while m is CONVERGE_COMPACT_MIN or
# more, at most CONVERGE_LEVELS times. hyp2f1 of 2,000 random points (its series over 72
# copies of each, all but a few inactive) took 2.4 s a call, x in (0.9, 1) 3.9 s, when one
# element's 10,000 terms stepped the whole tensor; compacting, 12-14 and 32 ms (a ratio of
# 32 or 64: slower at 20 points, whose m fell below the minimum). A third level, as narrow
# as 16 slots, pays only where a few elements step far longer than the rest (hyp2f1's
# series: its `levels` and `narrowest`): for every loop it cost up to 1 s more compile
# (betainc's gradient at 10^4 points, 2.7 → 3.8 s) and gained nothing on gammainc.
CONVERGE_COMPACT_RATIO = 16
CONVERGE_COMPACT_MIN = 64
CONVERGE_LEVELS = 2
# The size from which a loop has a level to compact to.
CONVERGE_COMPACT_FROM = CONVERGE_COMPACT_RATIO * CONVERGE_COMPACT_MIN


def converge_compacting(
    init: Sequence[ir.Value],
    params: Sequence[ir.Value],
    active: ir.Value,
    step: Callable[..., tuple[Sequence[ir.Value], ir.Value]],
    max_steps: int,
    counted: bool = False,
    levels: int = CONVERGE_LEVELS,
    narrowest: int = CONVERGE_COMPACT_MIN,
) -> list[ir.Value]:
    """`converge` where `step(params, state)` reads nothing shaped like the state but
    `state` and `params` (the values each element holds fixed, shaped like the state);
    `counted`: `step(params, state, i)`, i the 0-d int64 count of steps before it (the
    same for every element and level; cheaper than a count of each element's own).

    A step costs as much for a few going elements as for all of them: where most elements
    of a series need 30 terms and the last one 10,000, every element would step 10,000 times.
    So while more than m = n / CONVERGE_COMPACT_RATIO of n elements (flat) are going, all
    n step; then the going ones are gathered into m slots with their params
    (`compaction_slots`), step there (compacting again the same way), and their states
    are scattered back. Each element steps as in `converge`, the step count carried over
    to `max_steps`. Levels whose m is below CONVERGE_COMPACT_MIN are left out; of a size
    known at run time, the module holds every level inside an `if` on its m, which
    specialization folds (`compacted_if_pending`): a small module keeps no scatter.
    `levels` and `narrowest` (the least m of a level after the first) are for loops
    whose few longest elements step far longer than the rest (`CONVERGE_LEVELS`).

    Lowered for the CPU (`loops_by_rows`), outside other loops, the elements first step
    by rows (`_rows_first`) where more than m of them are active, and only those still
    going after CONVERGE_ROW_STEPS steps reach the levels. (Inside a loop, another copy of
    the step would count towards that loop's ops, which decide whether the module gets
    XLA:CPU's small loops at all: `compile.takes_small_loops`.)"""
    dims = shape_of(init[0])
    n = dim_product(dims)
    state, params = ([reshape(x, [n]) for x in xs] for xs in (init, params))
    active = reshape(active, [n])

    def stepping(params, state, i):
        return step(params, state, i) if counted else step(params, state)

    i = ir_constant(np.int64(0))
    if _BY_ROWS.get() and not in_loop_body():
        i, active, *state = _rows_first(n, active, state, params, stepping, max_steps)
    state = _compacting_levels(n, i, active, state, params, stepping, max_steps, levels, CONVERGE_COMPACT_MIN,
                               narrowest)
    return [reshape(x, dims) for x in state]


# On the CPU, `converge_compacting` steps its elements by rows of CONVERGE_ROW_LANES first,
# each row until its own elements are done or CONVERGE_ROW_STEPS steps, from
# CONVERGE_COMPACT_FROM elements. The levels' first loop streams every state tensor through
# memory at each step until all but 1/16 of the elements are done: the incomplete gamma
# function's series over 10^5 points (mostly 10-60 terms) stepped all of them some 35
# times. A row's loop runs in cache (XLA:CPU compiles loops over little data into one
# function, `compile.takes_small_loops`), and a row waits only for its own slowest
# element. The cap leaves long tails to the levels: by rows alone, the one element of
# hyp2f1's 2,000 points near x = 1 that sums 10,000 terms kept its row of 128 stepping,
# 34 → 74 ms a call. Below CONVERGE_COMPACT_FROM a loop's tensors stay in cache anyway, and
# rows cost more than they save: the censored Gamma model's 1,000 points took 176 → 215
# µs a call by rows from 256 elements. (benchmarks/README.md, "Series by rows".)
CONVERGE_ROW_LANES = 128
CONVERGE_ROW_STEPS = 64
_BY_ROWS: ContextVar[bool] = ContextVar("converge_by_rows", default=False)


@contextlib.contextmanager
def loops_by_rows(on: bool):
    """While lowering inside it, `converge_compacting` steps by rows first if `on` (the
    CPU; a GPU launches a kernel per step of a row's loop)."""
    token = _BY_ROWS.set(on)
    try:
        yield
    finally:
        _BY_ROWS.reset(token)


def _rows_first(n: Dim, active, state, params, step, max_steps: int) -> list[ir.Value]:
    """[i, still, *state] after each row of CONVERGE_ROW_LANES elements has stepped until
    its active elements are done, at most CONVERGE_ROW_STEPS times: i that cap (the count
    each element still going has stepped), or 0 with `active` and `state` as they were
    where no more than n / CONVERGE_COMPACT_RATIO elements are active (the levels compact
    those at once: hyp2f1 of 20 points, whose stacked calls are few of them active, took
    248 → 291-310 µs a call by rows) or n is below CONVERGE_COMPACT_FROM."""
    steps = min(max_steps, CONVERGE_ROW_STEPS)

    def run(_, own, row):
        going, *row = row
        i, going, *row = _converging(ir_constant(np.int64(0)), going, row, lambda s, i: step(own, s, i), steps, 0)
        _reads_no_outer_tensor(i.owner, own)
        return [going, *row]

    def by_rows():
        return [ir_constant(np.int64(steps)), *each_row(n, params, [active, *state], run, CONVERGE_ROW_LANES)]

    def as_they_are():
        return [ir_constant(np.int64(0)), active, *state]

    types = [x.type for x in as_they_are()]

    def where_dense():
        values = if_else(more_than(active, dim_quotient(n, CONVERGE_COMPACT_RATIO)), types, by_rows, as_they_are)
        values[0].owner.attributes[ROWS_FIRST] = ir.UnitAttr.get()
        return values

    return compacting_if_large(n, types, where_dense, as_they_are)


# The attribute marking `_rows_first`'s `if`, for `drop_rows_first`.
ROWS_FIRST = "pytensor.rows_first"


def drop_rows_first(module_op: ir.Operation) -> None:
    """Every `if` of `_rows_first` in the module replaced by its other branch (the state
    as it was, the count at 0), for a module XLA compiles without its small-loop threshold
    (whose executor would run each row's loop kernel by kernel: betaincinv of 10^4 points,
    a Newton loop too long for the threshold around its incomplete betas, took 33 → 65 ms a
    call by rows), or that another compiler reads."""
    ifs = []

    def visit(op):
        if op.name == "stablehlo.if" and ROWS_FIRST in op.attributes:
            ifs.append(op)
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    for op in ifs:
        block = op.regions[1].blocks[0]
        *computed, returned = list(block.operations)
        for inner in computed:  # (the count's constant)
            inner.move_before(op)
        for result, value in zip(op.results, returned.operands, strict=True):
            result.replace_all_uses_with(value)
        # (the pass pipeline moves constants out of regions: those only the rows read go too)
        hoisted = {value.owner.operation: None for value in _read_from_outside(op) if _is_constant(value)}
        op.erase()
        for constant in hoisted:
            if not list(constant.result.uses):
                constant.erase()


def written_for_the_executor(module_op: ir.Operation) -> None:
    """The module without what only XLA:CPU's small loops run well (`compile.takes_small_loops`):
    `cumsum`'s loops over blocks written out (`expand_in_order_scans`), `converge_compacting`'s
    rows dropped (`drop_rows_first`)."""
    expand_in_order_scans(module_op)
    drop_rows_first(module_op)


def compacting_if_large(n: Dim, types: Sequence[ir.Type], compacting: Callable[[], Sequence[ir.Value]],
                        whole: Callable[[], Sequence[ir.Value]]) -> list[ir.Value]:
    """`compacting()` where n elements reach `converge_compacting`'s first level, else
    `whole()`: for a loop whose plain form costs less a step than `converge`'s (it need
    not carry a going mask beside its own), so that sizes which cannot compact keep it. Of
    a run-time n, an `if` that specialization folds."""
    if isinstance(n, int):
        return list(compacting() if n >= CONVERGE_COMPACT_FROM else whole())
    return if_else(compare(dim_value(n), dim_value(CONVERGE_COMPACT_FROM), "GE"), types, compacting, whole)


def _compacting_levels(n: Dim, i, still, state, params, step, max_steps: int, levels: int, minimum: int,
                       narrowest: int) -> list[ir.Value]:
    level = compaction_level(n, CONVERGE_COMPACT_RATIO, minimum) if levels else None
    i, still, *state = _converging(i, still, state, lambda state, i: step(params, state, i), max_steps,
                                   0 if level is None else level[1])
    _reads_no_outer_tensor(i.owner, params)  # (at every size: the same rule meets others)
    if level is None:
        return state
    m = level[0]

    def compact():
        return in_slots(still, n, m, state, params, lambda left, state_m, params_m: _compacting_levels(
            m, i, left, state_m, params_m, step, max_steps, levels - 1, narrowest, narrowest))

    # A loop stopped by max_steps may leave more than m going, and nothing to step.
    going = hlo.and_(still, splat(compare(i, ir_constant(np.int64(max_steps)), "LT"), still))
    return compacted_if_pending(m, going, [x.type for x in state], compact, lambda: state, minimum)


def _reads_no_outer_tensor(loop: ir.Operation, params: Sequence[ir.Value]) -> None:
    """Raise where an op inside `loop` reads a tensor of rank 1 or more from outside it
    that is not one of `params` nor a constant: a compacted copy of the loop would read
    it whole, not its slots."""
    for value in _read_from_outside(loop):
        if ir.RankedTensorType(value.type).rank and not any(value == p for p in params) and not _is_constant(value):
            raise ValueError(f"converge_compacting: a step reads {value.type} from outside its state and params "
                             "(pass it in params)")


def _read_from_outside(op: ir.Operation) -> list[ir.Value]:
    """The values that ops inside `op`'s regions read and that are defined outside `op`."""
    op = op.operation

    def outside(value) -> bool:
        owner = value.owner.owner if isinstance(value.owner, ir.Block) else value.owner
        owner = owner.operation
        while owner is not None:
            if owner == op:
                return False
            owner = owner.parent
        return True

    reads = []

    def visit(inner):
        reads.extend(value for value in inner.operands if outside(value))
        return ir.WalkResult.ADVANCE

    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                inner.operation.walk(visit)
    return reads


def _is_constant(value: ir.Value) -> bool:
    return not isinstance(value.owner, ir.Block) and value.owner.operation.name == "stablehlo.constant"


def more_than(mask: ir.Value, limit: Dim) -> ir.Value:
    """0-d i1: whether more than `limit` elements of the flat `mask` hold. A limit read at
    run time that may be 0 (`compaction_level`'s) selects the or-reduce for 0: once a
    module is specialized to a size where it is 0, XLA keeps only that reduce."""
    if isinstance(limit, int) and limit == 0:
        return any_true(mask)
    counted = compare(fold(convert(mask, "int64"), [0], hlo.add, 0), dim_value(limit), "GT")
    if isinstance(limit, int):
        return counted
    return select(compare(limit, dim_value(0), "EQ"), any_true(mask), counted)


def compaction_level(n: Dim, ratio: int, minimum: int) -> tuple[Dim, Dim] | None:
    """(m, limit) of a compacting level over n elements: the loop runs over all n while
    more than `limit` are pending, then over m = n / `ratio`. None where a static m is
    below `minimum`; of a run-time n, the limit is 0 (every step over all n) where m is
    then."""
    m = dim_quotient(n, ratio)
    if isinstance(m, int):
        return (m, m) if m >= minimum else None
    return m, select(compare(m, dim_value(minimum), "GE"), m, dim_value(0))


def compacted_if_pending(m: Dim, pending: ir.Value, types, compact, keep, minimum: int) -> list[ir.Value]:
    """After a level's loop over all n elements: `compact()` where any element is still
    `pending`, else `keep()`. Of a run-time m, inside an `if` on m >= `minimum`: below
    it the level's limit was 0, so none is pending, and a module specialized to such a
    size drops the compaction (`passes.fold_constant_if`), its scatter and its copy of
    the loop, which XLA would otherwise compile (a scatter also keeps the module from
    the elemental emitter, `compile.suits_elemental_emitter`)."""
    def if_pending():
        return if_else(any_true(pending), types, compact, keep)

    if isinstance(m, int):
        return if_pending()
    return if_else(compare(m, dim_value(minimum), "GE"), types, if_pending, keep)


def compaction_slots(pending: ir.Value, n: Dim, m: Dim) -> tuple[ir.Value, ir.Value]:
    """Where compaction puts the elements of a flat `pending` mask of n when at most m of
    them hold: (taken, left), `taken` the (m, 1) positions of the pending elements in
    order (a gather's or a scatter's indices), `left` the (m,) mask of the slots they
    fill. The slots past them hold n: a gather clamps it, a scatter drops it."""
    # (a dim read at run time is below 2**31: `specialize` refuses larger ones)
    index_dtype = "int64" if isinstance(n, int) and n >= 2**31 else "int32"
    flags = convert(pending, index_dtype)
    seen = cumulative(flags, 0, hlo.add, 0)
    # The i-th pending element goes to slot i; the others to slot m, which is dropped.
    slot = select(pending, hlo.subtract(seen, full_like(seen, 1)), splat(dim_value(m), seen))
    slots = iota([m], 0, index_dtype)
    taken = scatter_indexed(splat(dim_value(n), slots), [0], reshape(slot, [n, 1]), iota([n], 0, index_dtype), False,
                            keep_update)
    left = compare(slots, splat(fold(flags, [0], hlo.add, 0), slots), "LT")
    return reshape(taken, [m, 1]), left


def in_slots(pending: ir.Value, n: Dim, m: Dim, state: Sequence[ir.Value], params: Sequence[ir.Value],
             run: Callable[..., Sequence[ir.Value]]) -> list[ir.Value]:
    """`state` (flat tensors of n elements) with its elements where the flat `pending`
    holds (at most m of them) replaced by `run(left, state_m, params_m)`: `state` and
    `params` gathered into m slots, in order (`compaction_slots`; `left` the mask of the
    slots they fill), run's results (shaped like `state_m`) scattered back. A gather that
    `run` does not read is dead code, which XLA drops."""
    taken, left = compaction_slots(pending, n, m)
    state_m, params_m = ([gather_indexed(x, [0], taken, front=False) for x in xs] for xs in (state, params))
    return [scatter_indexed(x, [0], taken, y, False, keep_update)
            for x, y in zip(state, run(left, state_m, params_m), strict=True)]


def keep_update(_, update):
    """A scatter's combiner that writes the update over what was there."""
    return update


def if_else(
    pred: ir.Value,
    types: Sequence[ir.Type],
    then_fn: Callable[[], Sequence[ir.Value]],
    else_fn: Callable[[], Sequence[ir.Value]],
) -> list[ir.Value]:
    """`stablehlo.if` on a 0-d i1; each branch returns values of `types`."""
    op = hlo.IfOp(list(types), pred)
    for region, branch in ((op.true_branch, then_fn), (op.false_branch, else_fn)):
        with ir.InsertionPoint(region.blocks.append()):
            hlo.return_([cast_shape(v, t) for v, t in zip(branch(), types)])
    return list(op.results)


def where_some(mask: ir.Value, value: ir.Value, compute: Callable[[], ir.Value]) -> ir.Value:
    """`compute()` if some element of the boolean `mask` holds, else `value`; `compute()`
    must give `value` where `mask` is false. Work that few elements need (a reflection, a
    boost) then costs an or-reduce when none does. The `if` is also a fusion barrier: XLA
    does not fuse `value`'s producers into consumers beyond it."""
    return if_else(any_true(mask), [value.type], lambda: [compute()], lambda: [value])[0]


# `where_few` computes over m = n / FEW_RATIO slots when no more than m elements need it.
FEW_RATIO = 4


def where_few(mask: ir.Value, params: Sequence[ir.Value], compute: Callable[..., Sequence[ir.Value]],
              values: Sequence[ir.Value], compacts: bool = True) -> list[ir.Value]:
    """`values` with `compute(active, params)`'s outputs at the elements of `mask`, for
    work that costs each element about the same and that few need. `mask`, `params`
    and `values` share one shape; `compute` is elementwise, reading nothing shaped like
    them but `params`, its outputs valid where `active` holds. Not computed where no
    element holds (as `where_some`); with `compacts`, from CONVERGE_COMPACT_FROM
    elements, outside loops, where no more than m = n / FEW_RATIO hold, computed over m
    slots holding those elements (gathered with their params, in order), the outputs
    scattered back; else over all n, selected by `mask`. Temme's expansion of the
    incomplete gamma functions (25 terms of 25-term polynomials) over 10^5 random
    points, 14% of them needing it, took 3.7 of a call's 16 ms over all of them.
    Compacting puts a second copy of `compute` in the module, for XLA to compile."""
    dims = shape_of(mask)
    n = dim_product(dims)
    types = [v.type for v in values]

    def whole():
        return [select(mask, c, v) for c, v in zip(compute(mask, params), values, strict=True)]

    def compacted():
        m = dim_quotient(n, FEW_RATIO)
        flat_mask = reshape(mask, [n])

        def few():
            flat = in_slots(flat_mask, n, m, [reshape(v, [n]) for v in values], [reshape(p, [n]) for p in params],
                            lambda left, _, params_m: compute(left, params_m))
            return [reshape(v, dims) for v in flat]

        return if_else(more_than(flat_mask, m), types, whole, few)

    def where_any():
        return whole() if not compacts or in_loop_body() else compacting_if_large(n, types, compacted, whole)

    return if_else(any_true(mask), types, where_any, lambda: values)


def scatter_indexed(x, axes, index, updates, front, combine):
    """x with `updates` (shaped like `gather_indexed(x, axes, index, front)`) combined in."""
    batch = list(shape_of(index))[:-1]
    _, offset = gather_dims(x, axes, batch, front)
    dnums = hlo.ScatterDimensionNumbers.get(
        update_window_dims=offset, inserted_window_dims=list(axes), input_batching_dims=[],
        scatter_indices_batching_dims=[], scattered_dims_to_operand_dims=list(axes),
        index_vector_dim=len(batch),
    )
    return scatter(x, index, updates, dnums, combine)


def cumulative(x, axis, combine, identity, written_out: bool = False):
    """Inclusive scan along `axis`: a reduce_window where the axis is static and at most
    _STATIC_SCAN_MAX long, otherwise `prefix_scan` (`written_out`: see there)."""
    n = static_shape(x.type)[axis]
    if n is None or n > _STATIC_SCAN_MAX:
        return prefix_scan(x, axis, combine, identity, written_out)
    if n == 0:
        return x  # (nothing to scan; a window of size 0 is invalid)
    rank = len(static_shape(x.type))
    window = [n if i == axis else 1 for i in range(rank)]
    padding = [(n - 1, 0) if i == axis else (0, 0) for i in range(rank)]
    init = ir_constant(np.asarray(identity, dtype=value_dtype(x)))
    return reduce_window(x, init, window, padding, combine)


# Rows per block of `prefix_scan`: each block is scanned on its own (a reduce_window of
# this static size, or its rows combined one by one), and only the blocks' totals by the
# loop of gathers.
_SCAN_BLOCK = 16
# Longer static axes are scanned by blocks too: XLA's reduce_window over a whole axis of
# 10^5 float64s took 775 µs a call, the blocks 403 (2·10^4: 142 and 95 µs; 10^3: equal).
_STATIC_SCAN_MAX = 256


def prefix_scan(x, axis, combine, identity, written_out: bool = False):
    """Inclusive scan along `axis`, of a size known only at run time (a reduce_window
    needs n as an attribute) or longer than _STATIC_SCAN_MAX. The axis is padded with
    `identity` to m blocks of _SCAN_BLOCK rows. Every shape is static once n is.

    By default `_doubling_scan` scans the blocks' totals (log2 m rounds of gathers), a
    reduce_window the rows within each block, and each block is combined with the total
    of the blocks before it. `written_out` (`cumsum`/`cumprod`, which may run at every
    call of a sampler, not the samplers' own prefix sums): the rows are combined one by
    one in numpy's order, by a loop over the blocks (`in_order_blocks`), or where the
    loop would run through XLA's executor, in blocks of rows written out
    (`blocks_written_out`). Without either, 10^5 float64s took 1,045 µs with the doubling
    scan over all rows."""
    dims = shape_of(x)
    # (p, n, q): the dims before the axis, the axis, the dims after it
    p, n, q = dim_product(dims[:axis]), dims[axis], dim_product(dims[axis + 1:])
    b = _SCAN_BLOCK
    m = dim_max(dim_quotient(dim_add(n, b - 1), b), 1)  # (a block to read when n is 0)
    dtype = value_dtype(x)
    rows = reshape(x, [p, n, q])
    padded = hlo.concatenate([rows, full(identity, [p, dim_sub(dim_product([m, b]), n), q], dtype)], 1)
    blocks = reshape(padded, [p, m, b, q])
    if written_out:
        scanned = in_order_blocks(blocks, combine, identity)
    else:
        within = cumulative(blocks, 2, combine, identity)  # (a reduce_window of b)
        totals = reshape(slice_axis(within, 2, b - 1, b), [p, m, q])
        scanned = combine(within, broadcast_in_dim(_offsets(totals, combine, identity), [p, m, b, q], [0, 1, 3]))
    out = slice_axis(reshape(scanned, [p, dim_product([m, b]), q]), 1, 0, n)
    return reshape(out, dims)


def _offsets(totals, combine, identity):
    """What each of m blocks starts from, given their totals (p, m, q): the identity for
    the first, the total through block i for block i + 1 (`_doubling_scan`)."""
    p, m, q = shape_of(totals)
    rows = reshape(transpose(totals, [1, 0, 2]), [m, dim_product([p, q])])
    before = _doubling_scan(rows, combine, identity)
    starts = hlo.concatenate([full(identity, [1, dim_product([p, q])], value_dtype(totals)), before], 0)
    return transpose(reshape(slice_axis(starts, 0, 0, m), [m, p, q]), [1, 0, 2])


# The attribute naming the combine of `in_order_blocks`' loop, for `expand_in_order_scans`.
IN_ORDER_SCAN = "pytensor.in_order_scan"
_IN_ORDER_COMBINES = {"stablehlo.add": hlo.add, "stablehlo.multiply": hlo.multiply,
                      "stablehlo.or": hlo.or_, "stablehlo.and": hlo.and_}


def scan_identity(combine, dtype):
    """The value a scan by `combine` (one of _IN_ORDER_COMBINES') starts from in `dtype`,
    which numpy's cumsum/cumprod do not need (they start from the first element): every
    value combined with it comes back to the bit. A float sum's is -0.0, since 0.0 + -0.0
    is 0.0 (not `identity_value`'s 0.0, what numpy's sum of nothing is). (A complex
    product's 1 + 0j changes the signs of some zeros: (1 + 0j) * (-0.0 - 0.0j) is
    0.0 - 0.0j; no complex value keeps them all.)"""
    dtype = np.dtype(dtype)
    if combine is hlo.add:
        return dtype.type(complex(-0.0, -0.0) if dtype.kind == "c" else -0.0 if dtype.kind == "f" else 0)
    return dtype.type(combine in (hlo.multiply, hlo.and_))


def in_order_blocks(blocks, combine, identity):
    """The inclusive scan of (p, m, b, q) `blocks` down their m * b rows (axis 1 and 2),
    each row combined with the total before it in order, as numpy's `cumsum` adds: a
    loop over the m blocks carrying the running total (p, q), each step reading its
    block, combining its b rows and writing them back in place.

    XLA:CPU compiles such a loop into one function where its small-loop threshold is set
    (`compile.takes_small_loops`): `cumsum` of 10^5 float64s of a run-time size took
    93-113 µs a call against 145-158 with `blocks_written_out`, its first call 0.04-0.06 s
    against 0.17-0.24 (benchmarks/README.md, "Single Ops: scans"). Through XLA's executor
    each step would cost a microsecond or so (7 ms for those 10^5), so the loop carries
    IN_ORDER_SCAN, and `expand_in_order_scans` turns it into `blocks_written_out` for
    modules compiled otherwise."""
    (name,) = [name for name, fn in _IN_ORDER_COMBINES.items() if fn is combine]
    p, m, b, q = shape_of(blocks)

    def cond(values):
        return compare(values[0], dim_value(m), "LT")

    def body(values):
        i, total, rows = values
        block = dynamic_index(rows, [1], [i])  # (p, 1, b, q)
        running = []
        for j in range(b):
            total = combine(total, slice_axis(block, 2, j, j + 1))
            running.append(total)
        update = with_static_dims(hlo.concatenate(running, 2), [None, 1, b, None])
        zero = dim_value(0)
        return [hlo.add(i, dim_value(1)), total, hlo.dynamic_update_slice(rows, update, [zero, i, zero, zero])]

    init = [dim_value(0), full(identity, [p, 1, 1, q], value_dtype(blocks)), blocks]
    *_, scanned = while_loop(init, cond, body)
    scanned.owner.attributes[IN_ORDER_SCAN] = ir.StringAttr.get(name)
    return scanned


def blocks_written_out(blocks, combine, identity):
    """`in_order_blocks`' scan without a loop over the blocks: each block's total is its
    rows combined in order, `_offsets` scans the totals, and each block's rows are then
    combined in order from the total of the blocks before it, two passes XLA fuses into
    one loop each (10^5 float64s of a run-time size: 198-221 µs a call against 393-435
    with a reduce_window within the blocks; 0.1-0.2 s more to compile, for the 16
    chained combines XLA emits per element)."""
    p, m, b, q = shape_of(blocks)
    parts = [slice_axis(blocks, 2, j, j + 1) for j in range(b)]
    totals = reshape(functools.reduce(combine, parts), [p, m, q])
    running = [combine(reshape(_offsets(totals, combine, identity), [p, m, 1, q]), parts[0])]
    for part in parts[1:]:
        running.append(combine(running[-1], part))
    return hlo.concatenate(running, 2)


def expand_in_order_scans(module_op: ir.Operation) -> None:
    """Every loop of `in_order_blocks` in the module as `blocks_written_out`, for a module
    XLA compiles without its small-loop threshold, or that another compiler reads."""
    loops = []

    def visit(op):
        if op.name == "stablehlo.while" and IN_ORDER_SCAN in op.attributes:
            loops.append(op)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    module_op.walk(visit, ir.WalkOrder.PRE_ORDER)
    for op in loops:
        combine = _IN_ORDER_COMBINES[ir.StringAttr(op.attributes[IN_ORDER_SCAN]).value]
        blocks = op.operands[2]
        with ir.InsertionPoint(op), op.location:
            scanned = blocks_written_out(blocks, combine, scan_identity(combine, value_dtype(blocks)))
        op.results[2].replace_all_uses_with(scanned)
        op.erase()


def _doubling_scan(rows, combine, identity):
    """Inclusive scan down the rows of a (n, k) tensor, n known only at run time:
    log2(n) rounds, round i combining each row with the row 2**i before it (a row
    gather)."""
    n = shape_of(rows)[0]
    positions = iota([n], 0, "int64")
    zero, one = full_like(positions, 0), dim_value(1)
    empty = full_like(rows, identity)

    def cond(values):  # the last round needed shifts by less than n
        return compare(hlo.shift_left(one, values[0]), dim_value(n), "LT")

    def body(values):
        i, acc = values
        source = hlo.subtract(positions, splat(hlo.shift_left(one, i), positions))
        earlier = gather_indexed(acc, [0], reshape(hlo.maximum(source, zero), [n, 1]), front=True)
        valid = broadcast_in_dim(compare(source, zero, "GE"), shape_of(acc), [0])
        return [hlo.add(i, one), combine(acc, select(valid, earlier, empty))]

    return while_loop([dim_value(0), rows], cond, body)[1]
