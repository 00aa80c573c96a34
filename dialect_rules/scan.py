"""Scan as one `stablehlo.while`, with PyTensor's buffers as the loop's state.

The inner graph is lowered once, by the same graph walker, into a private step
function; the loop body reads each input tap out of its buffer, calls the step, and
writes each output back with `dynamic_update_slice`. Everything follows
`Scan.perform`, buffer for buffer:

- every traced output (mit-mot, mit-sot, sit-sot, nit-sot) lives in a buffer of
  `store` rows used as a ring: step i reads tap t at `(pos + t) mod store` and
  writes at `pos`, where `pos = (i - mintap) mod store`; mit-mot outputs are
  written at `pos + out_tap` (their buffer holds every step);
- after the loop a ring that wrapped is rotated so its oldest row comes first, and
  rows never written are zero (as `perform` leaves them);
- untraced sit-sots (shared variables' updates) are plain loop-carried values;
- a while-Scan (`until`) stops when the condition holds; outputs whose buffer was
  large enough for every step are trimmed to the steps taken, a length known
  only once the loop ran (the runtime measures it, see `specialize.py`), unless
  one step fills the buffer (`_full_after_one_step`).

Loop-invariant values (sequences, non-sequences) are read from the enclosing scope.
Run-time checks raised inside the step (an index out of range) are or-ed into
loop-carried flags and raised after the loop.
"""

from __future__ import annotations

import numpy as np
from jax.extend.mlir import ir
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.scalar import ScalarType
from pytensor.scalar.loop import ScalarLoop
from pytensor.scan.op import Scan
from pytensor.tensor.type import TensorType

from dialect_rules.elemwise import inner_constants
from dialect_rules.scalar import int_divmod
from lowering.builders import (
    at_least_one,
    broadcast_in_dim,
    cast_shape,
    compare,
    convert,
    dim_size,
    dim_product,
    dim_value,
    full,
    full_like,
    dynamic_index,
    iota,
    ir_constant,
    read_entry,
    remainder,
    reshape,
    result_type,
    select,
    shape_of,
    shape_tensor,
    slice_axis,
    splat,
    value_dtype,
    with_dtype,
    with_scratch,
    write_entry,
)
from lowering.errors import UnsupportedParameterError
from lowering.graph import lower_function
from lowering.regions import any_true, compacting_if_large, converge_compacting, while_loop
from lowering.registry import register_lowering
from lowering.types import is_rng_type, static_shape

_I64 = "int64"
# A ScalarLoop's elements stop at their own n_steps: the compacting loop needs no limit.
_UNBOUNDED = np.iinfo(np.int64).max


def _scalar(x: ir.Value) -> ir.Value:
    return convert(reshape(x, ()), _I64)


def _floor_mod(a: ir.Value, n: ir.Value) -> ir.Value:
    """a mod n, non-negative as Python's `%` (a may be negative)."""
    return int_divmod(a, n)[1]


def _nonempty(buffer: ir.Value) -> bool:
    rows = static_shape(buffer.type)[0]
    return rows is not None and rows > 0


def _with_scratch_row(buffer: ir.Value) -> ir.Value:
    """A buffer that may be empty, with one more row at the end."""
    return buffer if _nonempty(buffer) else with_scratch(buffer, [0])


def _step_function(ctx, op: Scan):
    key = ("Scan", op)
    fn = ctx.memo.get(key)
    if fn is None:
        name = (op.name or "scan") + "_step"
        fn = ctx.memo[key] = lower_function(ctx, op.inner_inputs, op.inner_outputs, name)
    return fn


class _Buffers:
    """The traced outputs' buffers in `perform`'s order (mit-mot, mit-sot, sit-sot,
    nit-sot), with their ring sizes and first write positions."""

    def __init__(self, op: Scan, buffers: list[ir.Value], n_steps: ir.Value):
        self.op = op
        self.values = buffers
        self.store = [dim_value(dim_size(b, 0)) for b in buffers]
        # The divisor of the ring arithmetic: an empty buffer is an error raised after
        # the run (integer division by zero would stop the process, not raise).
        self.ring = [hlo.maximum(s, dim_value(1)) for s in self.store]
        self.mintaps = list(op.mintaps)
        self.start = [_floor_mod(dim_value(-m), s) for m, s in zip(self.mintaps, self.ring)]
        self.n_steps = n_steps

    def position(self, k: int, i: ir.Value) -> ir.Value:
        return remainder(hlo.add(self.start[k], i), self.ring[k])

    def read_taps(self, buffers: list[ir.Value], i: ir.Value, written=None) -> list[ir.Value]:
        """Step i's input taps: tap t of buffer k at `(pos + t) mod store`. With the
        values step i-1 `written` (per buffer), a sit-sot's one tap is that value."""
        info = self.op.info
        first_sit_sot = info.n_mit_mot + info.n_mit_sot
        rows = []
        for k, taps in enumerate(info.tap_array):
            if written is not None and k >= first_sit_sot:
                rows.append(cast_shape(convert(written[k], value_dtype(buffers[k])), _row_type(buffers[k])))
                continue
            pos = self.position(k, i)
            rows += [read_entry(buffers[k], [_floor_mod(hlo.add(pos, dim_value(t)), self.ring[k])]) for t in taps]
        return rows


def _row_type(buffer: ir.Value) -> ir.Type:
    t = ir.RankedTensorType(buffer.type)
    return ir.RankedTensorType.get(list(t.shape)[1:], t.element_type)


@register_lowering(Scan)
def lower_scan(ctx, node, *operands):
    op, info = node.op, node.op.info
    _refuse_untensored(node)
    outer = list(operands)
    n_steps = _scalar(outer[0])
    seqs, non_seqs = op.outer_seqs(outer), op.outer_non_seqs(outer)
    readable_seqs = [at_least_one(seq, [0]) for seq in seqs]
    untraced = op.outer_untraced_sit_sot(outer)
    step = _step_function(ctx, op)
    n_inner_outs = len(op.inner_outputs)
    checks = ctx.checks_of(step)

    ctx.runtime_check(
        compare(n_steps, dim_value(0), "LT"), IndexError, "Scan was asked to run for a negative number of steps"
    )
    for k, seq in enumerate(seqs):
        ctx.runtime_check(
            compare(dim_value(dim_size(seq, 0)), n_steps, "LT"), ValueError,
            f"Sequence {k} is shorter than the Scan's required number of steps",
        )
    traced = op.outer_mitmot(outer) + op.outer_mitsot(outer) + op.outer_sitsot(outer)
    traced += _nit_sot_buffers(ctx, node, step, outer)
    buffers = _Buffers(op, traced, n_steps)
    for k, store in enumerate(buffers.store):
        ctx.runtime_check(
            hlo.and_(compare(n_steps, dim_value(0), "GT"), compare(store, dim_value(0), "EQ")), ZeroDivisionError,
            f"Scan output {k} has an empty buffer",
        )

    false = ir_constant(False)
    carried = [_with_scratch_row(b) for b in traced]
    # The input taps of step i+1 are read at the end of step i, after its writes, and
    # carried: within a step a buffer is only written, never read, so XLA updates it
    # in place (reads fused into other outputs' writes made it copy the buffer).
    taps = buffers.read_taps(carried, dim_value(0))
    init = [dim_value(0), ir_constant(True), *carried, *taps, *untraced, *[false] * len(checks)]
    n_bufs, n_untraced = len(traced) + len(taps), len(untraced)

    def cond(values):
        i, go = values[0], values[1]
        return hlo.and_(compare(i, n_steps, "LT"), go)

    def body(values):
        i, bufs = values[0], list(values[2 : 2 + len(traced)])
        taps = values[2 + len(traced) : 2 + n_bufs]
        state = values[2 + n_bufs : 2 + n_bufs + n_untraced]
        flags = values[2 + n_bufs + n_untraced :]
        positions = [buffers.position(k, i) for k in range(len(traced))]

        inner = [read_entry(seq, [i]) for seq in readable_seqs] + taps + state + non_seqs
        results = ctx.emit_call(step, inner)
        outs, step_flags = results[:n_inner_outs], results[n_inner_outs:]

        for k, (group, out_taps) in enumerate(
            zip(op.inner_mitmot_outs_grouped(outs), info.mit_mot_out_slices, strict=True)
        ):
            for value, t in zip(group, out_taps, strict=True):
                bufs[k] = write_entry(bufs[k], value, [hlo.add(positions[k], dim_value(t))])
        written = op.inner_mitsot_outs(outs) + op.inner_sitsot_outs(outs) + op.inner_nitsot_outs(outs)
        for k, value in enumerate(written, start=info.n_mit_mot):
            bufs[k] = write_entry(bufs[k], value, [positions[k]])
        following = hlo.add(i, dim_value(1))
        taps = buffers.read_taps(bufs, following, [None] * info.n_mit_mot + written)
        state = [
            cast_shape(convert(v, value_dtype(x)), x.type)
            for v, x in zip(op.inner_untraced_sit_sot_outs(outs), state, strict=True)
        ]
        go = hlo.not_(convert(reshape(outs[-1], ()), "bool")) if info.as_while else ir_constant(True)
        flags = [hlo.or_(a, b) for a, b in zip(flags, step_flags, strict=True)]
        return [following, go, *bufs, *taps, *state, *flags]

    results = while_loop(init, cond, body)
    # A for-loop runs all its steps: the count the module knows (a constant once the
    # call's sizes are), where the loop's counter is a value only the run gives.
    steps_taken = results[0] if info.as_while else hlo.maximum(n_steps, dim_value(0))
    bufs = [
        b if c is t else slice_axis(b, 0, 0, dim_size(t, 0))
        for b, c, t in zip(results[2 : 2 + len(traced)], carried, traced, strict=True)
    ]
    state = results[2 + n_bufs : 2 + n_bufs + n_untraced]
    for flag, check in zip(results[2 + n_bufs + n_untraced :], checks, strict=True):
        ctx.runtime_check(flag, check.error, check.message)

    outputs = bufs[: info.n_mit_mot]
    for k in range(info.n_mit_mot, len(traced)):
        outputs.append(_finish(buffers, k, bufs[k], steps_taken, info.as_while))
    for k in range(len(traced) - info.n_nit_sot, len(traced)):
        outputs[k] = _empty_when_no_step(outputs[k], n_steps, node.outputs[k].type.shape)
    return tuple(outputs + state)


def _empty_when_no_step(out: ir.Value, n_steps: ir.Value, shape) -> ir.Value:
    """perform returns a nit-sot of shape (0, 0, ...) when no step ran (it never
    learnt the row shape); dims PyTensor's type fixes keep their size."""
    unknown = [a for a in range(1, len(shape)) if shape[a] is None]
    if not unknown:
        return out
    ran = compare(n_steps, dim_value(0), "GT")
    dims = list(shape_of(out))
    limits = [select(ran, dim_value(d), dim_value(0)) if a in unknown else d for a, d in enumerate(dims)]
    out_dims = [d if a in unknown else dims[a] for a, d in enumerate(limits)]
    return hlo.real_dynamic_slice(
        result_type(out_dims, value_dtype(out)), out, shape_tensor([0] * len(dims)),
        shape_tensor(limits), shape_tensor([1] * len(dims)),
    )


def _finish(buffers: _Buffers, k: int, buf: ir.Value, steps: ir.Value, as_while: bool) -> ir.Value:
    """`perform`'s step 6: the ring in order, unwritten rows zero, a while-Scan's
    outputs trimmed to the steps it took."""
    store, ring, n_steps = buffers.store[k], buffers.ring[k], buffers.n_steps
    written = hlo.subtract(steps, dim_value(buffers.mintaps[k]))  # rows holding values
    wrapped = compare(store, written, "LE")
    rows = iota(shape_of(buf), 0, _I64)
    # A ring that wrapped is rotated by its next write position (its rows from there on,
    # then those before: a window of the ring written twice, which folds away where the
    # shift is a constant 0, as for a Scan of static length); otherwise rows past the
    # written ones are zero (perform keeps the input untouched when no step ran).
    shift = select(wrapped, remainder(written, ring), dim_value(0))
    length = dim_size(buf, 0)
    rotated = dynamic_index(hlo.concatenate([buf, buf], 0), [0], [shift], [length])
    keep = hlo.or_(
        broadcast_in_dim(hlo.or_(wrapped, compare(n_steps, dim_value(0), "EQ")), shape_of(rows), ()),
        compare(rows, splat(written, rows), "LT"),
    )
    out = select(keep, rotated, full(0, shape_of(buf), value_dtype(buf)))
    if as_while and not _full_after_one_step(buf, buffers.mintaps[k]):
        # perform: `buf[:-(n_steps - steps)]` when the loop stopped early and the
        # buffer was not a ring that wrapped.
        short = hlo.and_(hlo.not_(wrapped), compare(steps, n_steps, "LT"))
        length = select(short, hlo.subtract(store, hlo.subtract(n_steps, steps)), store)
        out = slice_axis(out, 0, 0, length)
    return out


def _full_after_one_step(buf: ir.Value, mintap: int) -> bool:
    """Whether a buffer has a static length of at most the rows one step fills (its
    initial taps and the step's write). perform trims a buffer that is not full when
    the loop stopped early, and a loop that runs at all takes a step: such a buffer
    keeps its length. ScanSaveMem makes these rings for outputs read only at [-1]."""
    rows = static_shape(buf.type)[0]
    return rows is not None and rows <= 1 - mintap


def _nit_sot_buffers(ctx, node, step, outer) -> list[ir.Value]:
    """Zero buffers of (size, *row shape) for the nit-sot outputs. A row shape the
    step's result types leave `?` is read off one call of the step on zeros, which
    is dead once shapes are refined (only its result shapes are used)."""
    op = node.op
    info = op.info
    if not info.n_nit_sot:
        return []
    first = op.info.n_mit_mot_outs + info.n_mit_sot + info.n_sit_sot
    rows = ctx.result_dims(step, range(first, first + info.n_nit_sot), lambda: _zero_step_inputs(op, outer))
    sizes = op.outer_nitsot(outer)
    buffers = []
    for j, (dims, size) in enumerate(zip(rows, sizes)):
        out_var = node.outputs[info.n_mit_mot + info.n_mit_sot + info.n_sit_sot + j]
        size_var = node.inputs[op.nit_sot_arg_offset + j]
        size_dim = int(size_var.data) if hasattr(size_var, "data") else _scalar(size)
        buffers.append(full(0, [size_dim, *dims], out_var.type.dtype))
    return buffers


def _zero_step_inputs(op: Scan, outer) -> list[ir.Value]:
    """Step inputs shaped as the loop passes them (sequence rows, buffer rows), zero."""
    def zero_row(x):
        return full(0, shape_of(x)[1:], value_dtype(x))

    inner = [zero_row(seq) for seq in op.outer_seqs(outer)]
    bufs = op.outer_mitmot(outer) + op.outer_mitsot(outer) + op.outer_sitsot(outer)
    for buf, taps in zip(bufs, op.info.tap_array, strict=True):
        inner += [zero_row(buf)] * len(taps)
    return inner + op.outer_untraced_sit_sot(outer) + op.outer_non_seqs(outer)


def _refuse_untensored(node) -> None:
    for v in node.inputs[1:] + node.outputs:
        if not isinstance(v.type, (TensorType, ScalarType)) and not is_rng_type(v.type):
            raise UnsupportedParameterError(
                node, f"a {v.type} input or output", "only tensors and random generators are lowered"
            )


@register_lowering(ScalarLoop)
def lower_scalar_loop(ctx, node, n_steps, *operands):
    """ScalarLoop inside an Elemwise (the gradients of gammainc, betainc, hyp2f1, ...):
    each element runs its own number of steps (its `n_steps`, or until its condition
    holds), and finished elements keep their state. One `stablehlo.while` over whole
    tensors; from `converge_compacting`'s first level (1,024 elements) the loop compacts
    its going elements instead, since one element's long tail would step every element
    (bench_ops' hyp2f1 gradient of 2,000 points: 18.6-22.0 ms a call whole, 6.0-9.6
    compacting). Below that the whole loop, whose step needs no going mask of its own,
    costs less.
    """
    op = node.op
    n_state = len(op.outputs) - int(op.is_while)
    init, constant = list(operands[:n_state]), list(operands[n_state:])
    steps = convert(n_steps, _I64)
    if not op.is_while:
        if not ctx.can_raise():
            raise UnsupportedParameterError(node, "no `until` condition inside a region", "its n_steps check cannot raise here")
        ctx.runtime_check(
            any_true(compare(steps, splat(dim_value(0), steps), "LT")), ValueError,
            "ScalarLoop does not have a termination condition.",
        )

    def step(state, constant):
        """The inner graph once: the next state, cast to the state's types, and the
        `until` flag (None without one)."""
        env = {c: full(c.data, shape_of(state[0]), c.type.dtype) for c in inner_constants(op.fgraph)}
        results = ctx.lower_graph(op.fgraph.inputs, op.fgraph.outputs, [*state, *constant], env)
        new = [cast_shape(convert(r, value_dtype(old)), old.type)
               for r, old in zip(results[:len(state)], state, strict=True)]
        return new, cast_shape(convert(results[-1], "bool"), with_dtype(state[0].type, "bool")) if op.is_while else None

    return tuple(compacting_if_large(
        dim_product(shape_of(steps)), [x.type for x in init] + [with_dtype(steps.type, "bool")] * op.is_while,
        lambda: _scalar_loop_compacting(op, init, constant, steps, step),
        lambda: _scalar_loop_whole(op, init, constant, steps, step),
    ))


def _scalar_loop_whole(op, init, constant, steps, step) -> list[ir.Value]:
    """The ScalarLoop as one loop over every element: [*state, until] after it."""
    def active(i, done_now):
        running = compare(splat(i, steps), steps, "LT")
        return hlo.and_(running, hlo.not_(done_now))

    def cond(values):
        return any_true(active(values[0], values[-1]))

    def body(values):
        i, *state, done_now = values
        running = active(i, done_now)
        new, until = step(state, constant)
        state = [select(running, n, old) for n, old in zip(new, state, strict=True)]
        if op.is_while:
            done_now = select(running, until, done_now)
        return [hlo.add(i, dim_value(1)), *state, done_now]

    done = full(False, shape_of(steps), "bool")
    _, *state, done_now = while_loop([dim_value(0), *init, done], cond, body)
    return state + [done_now] * op.is_while


def _scalar_loop_compacting(op, init, constant, steps, step) -> list[ir.Value]:
    """The ScalarLoop through `converge_compacting`: an element is done after its
    `n_steps`-th step (the loop's count, which goes on across levels) or its `until`.
    The step reads each element's n_steps and constants from `params` (a compacted level
    holds its own slots of them), never the whole `steps` and `constant`."""
    not_yet = [full(False, shape_of(steps), "bool")] * op.is_while  # the until flag's start

    def counted(params, state, i):
        own_steps, *own_constant = params
        new, until = step(state[:len(init)], own_constant)
        done = compare(splat(hlo.add(i, dim_value(1)), own_steps), own_steps, "GE")
        if op.is_while:
            return [*new, until], hlo.or_(done, until)
        return new, done

    active = compare(steps, full_like(steps, 0), "GT")
    return converge_compacting([*init, *not_yet], [steps, *constant], active, counted, _UNBOUNDED, counted=True)
