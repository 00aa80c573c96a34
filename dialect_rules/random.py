"""RandomVariable Ops: counter-based Threefry bits from the key the runtime draws
from the user's Generator, turned into draws with StableHLO ops.

A key is a `tensor<2xui32>` (`lowering.types.KEY_SHAPE`). Every key is used for one
thing only: `split` it into new keys, or turn it into `bits`, never both, so no two
draws share a counter. Each RandomVariable node splits its key into the key it
returns (`next_rng`) and the key its draws come from. The streams are not numpy's:
the same distributions, different numbers.

This module holds the key machinery, the rule every RandomVariable shares (shapes,
`size`, parameter broadcasting, numpy's parameter checks) and the samplers built
directly on uniform and normal numbers; families with their own algorithms live in
`random_continuous`, `random_discrete` and `random_multivariate`.
"""

from __future__ import annotations

import functools
import math
from contextvars import ContextVar
from typing import Callable, Sequence

import numpy as np
from jax.extend.mlir import ir
from jax.extend.mlir.dialects import chlo, func
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import graph_inputs
from pytensor.tensor.random import basic as rv

from lowering.builders import (
    Dim,
    broadcast_in_dim,
    broadcast_to,
    compare,
    convert,
    dim_add,
    dim_product,
    dim_quotient,
    dim_size,
    dim_value,
    divide,
    dynamic_index,
    full,
    full_like,
    iota,
    is_static,
    ir_constant,
    nearest_integer_and_offset,
    polynomial_erf_inv,
    polynomial_log,
    reshape,
    select,
    shape_of,
    signbit,
    sin_cos_pi_of_offset,
    slice_axis,
    splat,
    stack,
    static_slice,
    unstack,
    value_dtype,
    vector_element,
)
from lowering.regions import (
    any_true, compacted_if_pending, compaction_level, each_row, if_else, in_loop_body, in_loop_once, in_slots,
    more_than, row_count, where_some, while_loop,
)
from lowering.registry import register_lowering
from lowering.runtime import peek_key
from lowering.types import KEY_DTYPE, KEY_SHAPE, static_shape, tensor_type

U32 = "uint32"
U64 = "uint64"

# --- Threefry-2x32 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3") --

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA


def _rotate_left(x: ir.Value, r: ir.Value) -> ir.Value:
    """x rotated left by the 0-d ui32 `r` bits."""
    dims = shape_of(x)
    left = hlo.shift_left(x, broadcast_in_dim(r, dims, ()))
    right = hlo.shift_right_logical(x, broadcast_in_dim(hlo.subtract(ir_constant(np.uint32(32)), r), dims, ()))
    return hlo.or_(left, right)


# Threefry over at most this many counters is unrolled inside loops too (see below).
_UNROLLED_LANES = 64


def threefry2x32(key: ir.Value, x0: ir.Value, x1: ir.Value) -> tuple[ir.Value, ir.Value]:
    """The 20-round Threefry-2x32 block cipher of the counters (x0, x1) (ui32 tensors of
    one shape) under `key` (tensor<2xui32>).

    Outside loops the rounds are unrolled; inside a loop body (a rejection round) the five
    groups of four rounds are a loop, as JAX's are on CPU, carrying the key schedule and
    the rotation amounts, rotated each step. Measured on 10^6 draws:
    unrolled runs twice as fast and compiles faster at top level, but in loop-heavy
    samplers costs 0.3-0.7 s more compile time for 10-20% less run time. Over a few
    counters (_UNROLLED_LANES: a split key, a row's draws in `_rounds_by_rows`), the
    loop's own steps cost about what the rounds do: unrolled there (in-process A/B),
    4,000 gammas took 270 µs a call against 282 and compiled in 0.42 s against 0.47;
    10^5 gammas 3.10 against 3.24 ms, 4,000 negative binomials 783 against 811 µs.
    """
    k0, k1 = (reshape(static_slice(key, [i], [i + 1]), ()) for i in (0, 1))
    k2 = hlo.xor(hlo.xor(k0, k1), ir_constant(np.uint32(_PARITY)))
    x0 = hlo.add(x0, broadcast_in_dim(k0, shape_of(x0), ()))
    x1 = hlo.add(x1, broadcast_in_dim(k1, shape_of(x1), ()))
    rotations = [ir_constant(np.uint32(r)) for r in _ROTATIONS[0] + _ROTATIONS[1]]

    def group(i, x0, x1, k_next, k_after, rotations):
        """Four rounds, then the key injection of step i + 1 (a 0-d ui32)."""
        for r in rotations:
            x0 = hlo.add(x0, x1)
            x1 = hlo.xor(_rotate_left(x1, r), x0)
        x0 = hlo.add(x0, broadcast_in_dim(k_next, shape_of(x0), ()))
        x1 = hlo.add(x1, broadcast_in_dim(hlo.add(k_after, i), shape_of(x1), ()))
        return x0, x1

    lanes = shape_of(x0)
    if not _in_loop() or (is_static(lanes) and math.prod(lanes) <= _UNROLLED_LANES):
        schedule = (k0, k1, k2)
        for i in range(5):
            step = ir_constant(np.uint32(i + 1))
            half = rotations[4 * (i % 2): 4 * (i % 2) + 4]
            x0, x1 = group(step, x0, x1, schedule[(i + 1) % 3], schedule[(i + 2) % 3], half)
        return x0, x1

    def body(values):
        i, x0, x1, k0, k1, k2, *rotations = values
        i = hlo.add(i, ir_constant(np.uint32(1)))
        x0, x1 = group(i, x0, x1, k1, k2, rotations[:4])
        return [i, x0, x1, k1, k2, k0, *rotations[4:], *rotations[:4]]

    def cond(values):
        return compare(values[0], ir_constant(np.uint32(5)), "LT")

    _, x0, x1, *_ = while_loop([ir_constant(np.uint32(0)), x0, x1, k0, k1, k2, *rotations], cond, body)
    return x0, x1


def _in_loop() -> bool:
    """Whether ops built now land in a while loop's body or condition, at any depth; in
    a sampler lowered chunk by chunk (`_CHUNK_LOOP`), in a loop of the sampler's own."""
    return in_loop_body(_CHUNK_LOOP.get())


def split(key: ir.Value, n: int) -> list[ir.Value]:
    """`n` independent keys from one."""
    counters = ir_constant(np.arange(n, dtype=np.uint32))
    y0, y1 = threefry2x32(key, counters, full(0, (n,), U32))
    return [hlo.concatenate([static_slice(y0, [i], [i + 1]), static_slice(y1, [i], [i + 1])], 0) for i in range(n)]


def key_at(key: ir.Value, i: ir.Value) -> ir.Value:
    """The i-th of `split(key, m)` (any m > i), for a 0-d integer i known at run time."""
    y0, y1 = threefry2x32(key, reshape(convert(i, U32), [1]), full(0, (1,), U32))
    return hlo.concatenate([y0, y1], 0)


def bits(key: ir.Value, dims: Sequence[Dim], offset: ir.Value | None = None) -> ir.Value:
    """64 random bits (ui64) per element of a tensor of shape `dims`: the cipher of the
    counters 0, 1, ... (plus `offset`, a 0-d ui64, where given)."""
    flat = iota([dim_product(dims)], 0, U64)
    if offset is not None:
        flat = hlo.add(flat, splat(offset, flat))
    lo = convert(flat, U32)
    hi = convert(hlo.shift_right_logical(flat, full_like(flat, 32)), U32)
    y0, y1 = threefry2x32(key, lo, hi)
    word = hlo.or_(hlo.shift_left(convert(y0, U64), full_like(flat, 32)), convert(y1, U64))
    return reshape(word, dims)


# --- uniform and normal numbers ------------------------------------------------------


def work_dtype(dtype) -> str:
    """The float dtype draws of `dtype` are computed in (numpy computes in float64)."""
    return "float32" if np.dtype(dtype) in (np.float16, np.float32) else "float64"


def unit(word: ir.Value, dtype, open_zero: bool = False) -> ir.Value:
    """ui64 words to uniform numbers of float32/float64 `dtype`: in [0, 1) from the top
    m bits (m = 24 or 53), as numpy makes them; with `open_zero`, in (0, 1) as
    (k + 1/2) 2^(1-m) from the top m-1 bits k. (With m bits, k + 1/2 is not
    representable for k >= 2^(m-1), and the largest k would round up to 1.)"""
    m = 24 if np.dtype(dtype) == np.float32 else 53
    m -= open_zero
    x = convert(hlo.shift_right_logical(word, full_like(word, 64 - m)), dtype)
    if open_zero:
        x = hlo.add(x, full_like(x, 0.5))
    return hlo.multiply(x, full_like(x, 2.0**-m))


def uniform(
    key: ir.Value, dims: Sequence[Dim], dtype, open_zero: bool = False, offset: ir.Value | None = None,
) -> ir.Value:
    """Uniform numbers in [0, 1) (with `open_zero`, in (0, 1)); see `unit` and `bits`."""
    return unit(bits(key, dims, offset), dtype, open_zero)


def uniforms(
    key: ir.Value, dims: Sequence[Dim], dtype, n: int, open_zero: bool = False, offset: ir.Value | None = None,
) -> list[ir.Value]:
    """`n` tensors of uniform numbers under one key, the i-th from the counters that
    follow the (i - 1)-th's: no split of the key.

    Outside loops each tensor is its own cipher of a flat range of counters. As slices of
    one cipher over (n, *dims), two tensors read in one fused kernel made XLA:CPU's loop
    7-10x slower: 10^5 sums of two uniforms took 2.26 ms a call against 0.32, 10^5 Rice
    draws (two normals) 7.4 ms against 1.0 (in-process A/B, best of 5 medians). In a
    loop's body (a rejection round) the one cipher stays: there its own loop runs once,
    not n times, and 10^5 betas took 3.56 ms against 3.78 with n. The counters, hence the
    numbers, are the same either way."""
    if _in_loop():
        u = uniform(key, [n, *dims], dtype, open_zero, offset)
        return [reshape(slice_axis(u, 0, i, i + 1), dims) for i in range(n)]
    tensors = []
    for i in range(n):
        start = offset
        if i:
            skip = convert(dim_value(dim_product([i, *dims])), U64)
            start = skip if offset is None else hlo.add(offset, skip)
        tensors.append(uniform(key, dims, dtype, open_zero, start))
    return tensors


def written_uniforms(
    key: ir.Value, dims: Sequence[Dim], dtype, n: int, open_zero: bool = False, counted: bool = True,
) -> list[ir.Value]:
    """`uniforms`, ciphered in the body of a loop that runs once (its condition a flag the
    body clears, which XLA keeps; inside it, past _UNROLLED_LANES counters, the cipher
    is a loop of its own, as in any loop body): XLA:CPU writes a loop's results to
    memory, where uniforms fused into their readers' kernel are ciphered again for each
    value there that reads them. For the Wald sampler, whose uniforms reach the draws by
    many paths: against `uniforms` as they are now, 100 draws took 18.6-19.3 µs a call
    against 22.6-23.0 and 4,000 118-124 against 127-134, though 10^6 16.9-17.0 ms against
    15.2-15.7 (in-process A/B, best of 5 medians, two runs). (Against `uniforms` as
    slices of one cipher, 4,000 took 123 µs against 544, 10^6 16.7 ms against 67.6: most
    of that was the slices', see `uniforms`.) Not for every sampler: this way 10^6 uniforms,
    logistic and Cauchy draws ran 30-50% slower. `counted`: see `written`."""
    zeros = [full(0, dims, dtype) for _ in range(n)]
    return written(lambda: uniforms(key, dims, dtype, n, open_zero), zeros, counted)


# While `_loops_in` probes a sampler: the loops it does not count (`written`'s, where asked).
_UNCOUNTED: ContextVar[list | None] = ContextVar("_UNCOUNTED", default=None)


def written(
    compute: Callable[[], Sequence[ir.Value]], like: Sequence[ir.Value], counted: bool = True,
) -> list[ir.Value]:
    """`compute()`'s values (of the types of `like`) from `regions.in_loop_once`: written
    to memory once rather than computed again in each reader's kernel. Unless `counted`,
    `_loops_in` does not see the loop: a sampler without others then runs whole past
    _CHUNKS_FROM."""
    results = in_loop_once(compute, like)
    uncounted = _UNCOUNTED.get()
    if not counted and uncounted is not None:
        uncounted.append(results[0].owner.operation)
    return results[1:]


# A rejection round's numbers: draw(key, dims, offset) gives the round's tensors of
# shape `dims`, from the cipher of the counters from `offset` (a 0-d ui64, or None for 0).
Draw = Callable[[ir.Value, Sequence[Dim], "ir.Value | None"], list[ir.Value]]


def uniform_draws(dtype, n: int, open_zero: bool = False) -> Draw:
    """A `rejection` round's `draw`: `n` tensors of uniform numbers (`uniforms`)."""
    return lambda key, dims, offset=None: uniforms(key, dims, dtype, n, open_zero, offset)


def normal_of(u: ir.Value) -> ir.Value:
    """Standard normal numbers sqrt(2) erfinv(2u - 1) of open uniforms u (finite); in
    float64 by `polynomial_erf_inv`, whose log vectorizes where XLA's is a libm call per
    element that keeps the kernel it is fused into, the uniforms' cipher included, from
    being vectorized: 10^6 normals took 7.5 ms a call with chlo.erf_inv and 5.8 with it,
    10^4 multivariate normals of 10 2.1 and 1.0 (in-process A/B, best of 5 medians)."""
    centered = hlo.subtract(hlo.add(u, u), full_like(u, 1.0))
    erf_inv = polynomial_erf_inv if value_dtype(u) == "float64" else chlo.erf_inv
    return hlo.multiply(erf_inv(centered), full_like(u, math.sqrt(2.0)))


def box_muller(u: ir.Value) -> ir.Value:
    """Standard normal numbers of a flat tensor of k open uniforms by Box and Muller's
    transform: with h = k // 2, r = sqrt(-2 log u_i) and t = 2 u_(h+i) - 1 give the
    normals r cos(pi t) at i and r sin(pi t) at h + i, independent of each other; an
    odd k's last uniform goes through `normal_of`.

    A log, a square root and a sine and cosine (`sin_cos_pi_of_offset`) for two normals,
    where `normal_of`'s erfinv evaluates three polynomials of about 20 terms for each:
    4,000 gammas, whose rejection rounds draw a normal an element, took 190 µs a call with
    `normal_of` and 110 with this. Only for uniforms a loop carries (a rejection round's):
    uniforms ciphered in the normals' own kernel are ciphered once for each element that
    reads them, and 10^6 normals took 41.8 ms against `normal_of`'s 8.1 (39.2 against 7.9
    with each half of the pairs ciphered on its own; the join was most of it, see
    `normal`).

    Over a row's few uniforms the pairs are `written` before they are joined: 4,000 gammas
    107 → 95 µs a call, 4,000 betas 228 → 202, the mixed prior predictive 946 → 881; over
    more (10^5 gammas, chunks of 10^6), level or 6-8% slower (in-process A/B, best of 5
    medians)."""
    k = shape_of(u)[0]
    h = dim_quotient(k, 2)
    pairs = dim_add(h, h)
    radius, angle = slice_axis(u, 0, 0, h), slice_axis(u, 0, h, pairs)
    if isinstance(k, int) and k <= _UNROLLED_LANES:
        normals = written(lambda: _pairs_of_normals(radius, angle), [radius, angle])
    else:
        normals = _pairs_of_normals(radius, angle)
    if not (isinstance(k, int) and k % 2 == 0):
        normals.append(normal_of(slice_axis(u, 0, pairs, k)))
    return hlo.concatenate(normals, 0)


def _pairs_of_normals(radius: ir.Value, angle: ir.Value) -> list[ir.Value]:
    """Box and Muller's r cos(pi t) and r sin(pi t), r = sqrt(-2 log u) and t = 2 v - 1,
    of open uniforms u (`radius`) and v (`angle`) of one shape."""
    r = hlo.sqrt(hlo.multiply(full_like(radius, -2.0), polynomial_log(radius)))
    turns, offset = nearest_integer_and_offset(hlo.subtract(hlo.add(angle, angle), full_like(angle, 1.0)))
    sin, cos = sin_cos_pi_of_offset(offset)
    r = select(compare(turns, full_like(turns, 0.0), "EQ"), r, hlo.negate(r))  # (-1)^turns
    return [hlo.multiply(r, cos), hlo.multiply(r, sin)]


def normal(key: ir.Value, dims: Sequence[Dim], dtype) -> ir.Value:
    """Standard normal numbers. Outside loops, Box and Muller's pairs of ceil(n / 2)
    uniforms of each of two ciphers, the pairs `written` before they are joined: 10^6
    normals took 3.9 ms a call against 6.0 with `normal_of`, 4,000 30 µs against 58
    (in-process A/B, best of 5 medians); the pairs joined in their own kernel, 42.7 ms
    and 361 µs, XLA:CPU's concatenate of computed values running 7-10x slower. The
    loop does not make a sampler run by chunks: so, 3·10^5 normals took 1.20 ms against
    0.78 whole, 10^6 lognormals 4.56 against 3.82 (the Wald sampler's `written_uniforms`
    do: 10^6 draws 16.3 ms against 18.8). In a loop's body, `normal_of` open uniforms."""
    if _in_loop():
        return normal_of(uniform(key, dims, dtype, open_zero=True))
    n = dim_product(dims)
    pairs = normal_pairs(key, [dim_quotient(dim_add(n, 1), 2)], dtype)
    return reshape(slice_axis(hlo.concatenate(pairs, 0), 0, 0, n), dims)


def normal_pairs(key: ir.Value, dims: Sequence[Dim], dtype) -> list[ir.Value]:
    """Two tensors of independent standard normal numbers: outside loops, the cosine and
    sine halves of Box and Muller's pairs (`normal`), in a loop's body `normal_of` each
    of two uniforms. For samplers that take two normals an element (Rice, skew-normal):
    4,000 Rice draws took 83-84 µs a call with `normal_of` of each and 48-49 with these,
    10^5 994-996 and 813-850 (trees before and after in alternating processes)."""
    radius, angle = uniforms(key, dims, dtype, 2, open_zero=True)
    if _in_loop():
        return [normal_of(radius), normal_of(angle)]
    return written(lambda: _pairs_of_normals(radius, angle), [radius, angle], counted=False)


def exponential_of(u: ir.Value) -> ir.Value:
    """Standard exponential numbers -log(u) of open uniforms u: positive and finite.
    The log is `polynomial_log`'s (XLA's float64 log is a libm call per element): 10^6
    exponentials took 3.1 ms a call against 5.2 (2,000: 30 against 39 µs)."""
    return hlo.negate(polynomial_log(u))


def exponential(key: ir.Value, dims: Sequence[Dim], dtype) -> ir.Value:
    return exponential_of(uniform(key, dims, dtype, open_zero=True))


# A rejection loop over n elements compacts while n / _COMPACT_RATIO is COMPACT_MIN or
# more: see `_compacting`.
COMPACT_MIN = 1024
_COMPACT_RATIO = 16


def rejection(
    key: ir.Value,
    dims: Sequence[Dim],
    dtype,
    draw: Draw,
    propose: Callable[..., tuple[ir.Value, ir.Value]],
    params: Sequence[ir.Value] = (),
    pending: ir.Value | None = None,
    default: ir.Value | None = None,
    compacts: bool = True,
) -> ir.Value:
    """Rejection sampling on whole tensors. Each round, `draw(key, dims, offset)` gives the
    round's random numbers and `propose(params, *numbers)` the candidates and an
    acceptance mask of shape `dims`; `params` are the per-element parameters (tensors of
    shape `dims`) as that round sees them, and `propose` reads no other tensor of shape
    `dims`. Each `pending` element (all by default) keeps its first accepted candidate,
    the others `default` (0). The loop runs until every pending element has one: leave
    out elements whose parameters never accept.

    A round costs as much for a few pending elements as for all of them, and the last of
    10^6 gammas needs five or six rounds where most need one: the loop compacts its
    pending elements (`_compacting`), unless `compacts` is false (for proposals rejected
    so rarely that the copies of the round it compiles would never run). Where it
    compacts no more, below 16 * COMPACT_MIN elements, on the CPU, it runs by rows
    (`_rounds_by_rows`), also unless `compacts` is false; and on the CPU, past
    _CHUNKS_FROM elements, by chunks (`_chunked`). (A sampler of scalar draws runs whole
    by chunks there, `_sampled_by_chunks`, so its loops never get that many elements.)"""
    out = full(0, dims, dtype) if default is None else default
    pending = full(True, dims, "bool") if pending is None else pending
    n = dim_product(dims)
    pending, out, *params = (reshape(x, [n]) for x in (pending, out, *params))
    size = _chunk_size(n) if compacts else None
    if size is not None:
        return reshape(_chunked(key, n, size, draw, propose, params, pending, out), dims)
    return reshape(_compacting(key, n, draw, propose, params, pending, out, compacts, compacts), dims)


# On the CPU a sampler of scalar draws that loops (`_sampled_by_chunks`), and a rejection
# loop or `evolve`'s search of other samplers (`_chunked`), over more than _CHUNKS_FROM
# elements runs chunk by chunk. Whole rounds over n gammas (2.5) took 20.7 ns an element
# at 2.5e5, 45 at 5e5 and 10^6, where a round's dozen tensors outgrow this machine's 32
# MiB L3; in chunks of 65,536, 22 at 5e5 and 10^6, and 22.4 at 2.5e5 (chunks of 32,768:
# 30 ns at 10^6; of 131,072: 31). Whole samplers by chunks, at 2e5 (in-process A/B, best of
# 5 medians): binomials (20, 0.2) 12.0 → 2.9 ms, Poissons (3) 3.3 → 2.8, betas (2, 3) 9.8
# → 8.2, but gammas 3.9 → 4.2 and Student's t (4) 5.9 → 6.6.
CHUNK = 65_536
_CHUNKS_FROM = 3 * CHUNK


def _chunk_size(n: Dim) -> int | None:
    """The size of the chunks a loop over n elements runs by, or None where it runs
    whole: on the CPU (`_CPU_LOOPS`), a static n past _CHUNKS_FROM is cut into chunks
    of at most CHUNK, a multiple of ROW_LANES, as few as that allows. A run-time n does
    not chunk: both ways in its module cost every such sampler's build 30-70 ms more (a
    Poisson regression's posterior predictive draw, 0.115 → 0.155 s), for sizes a
    posterior predictive seldom reaches."""
    if not (_CPU_LOOPS.get() and isinstance(n, int) and n > _CHUNKS_FROM):
        return None
    count = -(-n // CHUNK)
    return -(-n // (count * ROW_LANES)) * ROW_LANES


def _chunked(key, n: int, size: int, draw, propose, params, pending, out) -> ir.Value:
    """`_compacting` over n elements (flat) by chunks of `size` (`_chunk_size`): a loop
    over the chunks (the last padded with elements that are not pending), each its own
    compacting loop (its levels, then rows) under its own key, the i-th of
    `split(key, chunks)`."""
    def run(i, fixed, state):
        pending, *params = fixed
        (out,) = state
        return [_compacting(key_at(key, i), size, draw, propose, params, pending, out)]

    return each_row(n, [pending, *params], [out], run, size)[0]


def _rounds(key, dims, draw, propose, params, pending, out, limit: Dim = 0) -> list[ir.Value]:
    """`rejection`'s rounds over the whole tensor while more than `limit` elements are
    pending: [pending, out] after them.

    A round's numbers are drawn at the end of the round before, only if there is a next
    round, and carried in the loop state. Drawn inside the round, XLA's CPU fusion copies
    their Threefry into every fusion of the test that reads them and recomputes it there
    (five times in a Poisson PTRS round, which ran eight times slower)."""
    def advance(key):
        key, following = split(key, 2)
        return key, lambda: draw(following, dims)

    def loop():
        return _round_loop(key, draw(first, dims), advance, propose, params, pending, out, limit)

    key, first = split(key, 2)
    return if_else(more_than(pending, limit), [pending.type, out.type], loop, lambda: [pending, out])


def _round_loop(source, numbers, advance, propose, params, pending, out, limit: Dim = 0) -> list[ir.Value]:
    """The loop of rounds, the first round's `numbers` given, until at most `limit`
    elements are pending: [pending, out] after it. `source` is what the rounds draw from
    (a key, or a counter offset); `advance(source)` gives the next one and a function
    drawing the next round's numbers from it, called only if there is a next round."""
    def body(values):
        source, pending, out, _, *numbers = values
        candidate, accepted = propose(params, *numbers)
        source, draw_next = advance(source)
        out = select(hlo.and_(pending, accepted), candidate, out)
        pending = hlo.and_(pending, hlo.not_(accepted))
        again = more_than(pending, limit)
        numbers = if_else(again, [x.type for x in numbers], draw_next, lambda: numbers)
        return [source, pending, out, again, *numbers]

    state = [source, pending, out, ir_constant(np.True_), *numbers]
    return while_loop(state, lambda values: values[3], body)[1:3]


def _compacting(key, n: Dim, draw, propose, params, pending, out, compacts: bool = True, rows: bool = True) -> ir.Value:
    """`rejection` over `n` elements (flat). While m = n / _COMPACT_RATIO is COMPACT_MIN
    or more: rounds over all n until at most m are pending; then, if any is, the rest of
    the loop runs over m elements, the pending ones gathered first with their parameters
    (a prefix sum gives each its slot), and their draws are scattered back.

    Of a static n, compacting again while m allows; each level is one more copy of the
    round in the module (XLA compiles each in about 0.4 s). Of an n known only at run
    time, one level, taken only if m is large enough then: the module has one shape for
    all n. Its prefix sum is then `prefix_scan` (log2 n gathers), not a reduce_window.
    Without `compacts`, every round runs over all n. With `rows`, on the CPU, n below
    _ROWS_BELOW runs by rows instead (`_rounds_by_rows`): the last level, or a run-time
    n from the first round."""
    level = compaction_level(n, _COMPACT_RATIO, COMPACT_MIN) if compacts else None

    def whole():
        return [_rounds(key, [n], draw, propose, params, pending, out)[1]]

    def levels():
        m, limit = level
        key_n, inner = split(key, 2)
        pending_n, out_n = _rounds(key_n, [n], draw, propose, params, pending, out, limit)

        def compact():
            return in_slots(pending_n, n, m, [out_n], params, lambda left, out_m, params_m: [
                _compacting(inner, m, draw, propose, params_m, left, out_m[0], isinstance(n, int), rows)])

        return compacted_if_pending(m, pending_n, [out.type], compact, lambda: [out_n], COMPACT_MIN)

    def by_rows():
        return [_rounds_by_rows(key, n, draw, propose, params, pending, out)]

    otherwise = whole if level is None else levels
    if not (rows and _CPU_LOOPS.get()):
        return otherwise()[0]
    if isinstance(n, int):
        return (by_rows if ROW_LANES < n < _ROWS_BELOW else otherwise)()[0]
    # Both, chosen by the size at run time: specialized to a size, the module keeps one
    # (`passes.fold_constant_if`).
    return if_else(compare(n, dim_value(_ROWS_BELOW), "LT"), [out.type], by_rows, otherwise)[0]


# Elements in a row of `_rounds_by_rows`: 4,000 and 16,000 gammas (best of 3 medians in
# one process) took 0.26 and 0.99 ms a call in rows of 8, 0.27 and 1.01 in rows of 16,
# 0.27 and 1.06 in rows of 32, 0.31 and 1.19 in rows of 64. (The searches of `evolve`
# stay whole: by rows, 4,000 Poissons of mean 3 took 0.18 ms against 0.13, each
# row's step costing more than the whole tensor's few flops an element.)
ROW_LANES = 16
# Whether the samplers lowered now may loop by rows and by chunks (`_chunked`): XLA:CPU
# compiles a loop over rows into one function, which runs a row's round in a few hundred
# nanoseconds, and its caches favour a chunk at a time; elsewhere each step of a loop is a
# kernel launch, and a GPU's many threads want the whole tensor (`register_sampler` sets
# it per node).
_CPU_LOOPS: ContextVar[bool] = ContextVar("cpu_loops", default=False)
# The loop over chunks a sampler runs in (`_sampled_by_chunks`), while it is lowered:
# `_in_loop` looks no further out.
_CHUNK_LOOP: ContextVar[ir.Operation | None] = ContextVar("chunk_loop", default=None)
# From this many elements a loop runs by whole rounds: its loop over rows would no
# longer be one function (XLA:CPU's small-loop threshold, SMALL_LOOP_BYTES), and each
# row's step would be a kernel launch.
_ROWS_BELOW = _COMPACT_RATIO * COMPACT_MIN


def _rounds_by_rows(key, n: Dim, draw: Draw, propose, params, pending, out) -> ir.Value:
    """`_rounds` over all n elements, row by row (ROW_LANES elements a row): each row
    runs its own rounds until its pending elements have their draws, a row with none
    no round. A round over n elements costs as much for its last few pending elements as
    for all of them, and the last of 4,000 gammas needs three rounds where most need
    one; a row's last rounds cost a row's. In one function (XLA:CPU's small loops) the
    loop over rows costs little: 4,000 gammas took 0.27 ms a call against 0.41 by whole
    rounds, 16,000 1.0 against 2.5. A module with a loop past ELEMENTAL_MAX_OPS ops gets
    no small loops (`compile.compile_module`), and its executor runs the loop over rows
    kernel by kernel: 4,000 negative binomials then took 1.72 ms against 1.40 by whole
    rounds, 4,000 gammas 0.55 against 0.51.

    Round r of row i draws from the counters from (r * rows + i) * 2**32 under `key`:
    no cipher spent on splitting keys, and no two rounds share a counter."""
    shift = ir_constant(np.uint64(32))
    step = hlo.shift_left(convert(dim_value(row_count(n, ROW_LANES)), U64), shift)

    def run(i, fixed, state):
        pending, *params = fixed
        (out,) = state
        first = hlo.shift_left(convert(i, U64), shift)

        def advance(offset):
            offset = hlo.add(offset, step)
            return offset, lambda: draw(key, [ROW_LANES], offset)

        def loop():
            return _round_loop(first, draw(key, [ROW_LANES], first), advance, propose, params, pending, out)[1:]

        return if_else(any_true(pending), [out.type], loop, lambda: [out])

    return each_row(n, [pending, *params], [out], run, ROW_LANES)[0]


# Steps per iteration of `evolve`'s loop (best of 7 medians in one process): 10^5
# Poisson(3) numbers, a search to about 14, 3.8-4.2 ms a call with one step, 2.8-3.5 with
# 2, 4 or 8; a Poisson regression's posterior predictive draw 1.80 ms with 2, 1.66 with 4
# or 8. Compile time grows with it.
_STEPS_PER_ITERATION = 4


def evolve(
    state: Sequence[ir.Value],
    params: Sequence[ir.Value],
    active: Callable[[list[ir.Value], list[ir.Value]], ir.Value],
    step: Callable[[list[ir.Value], list[ir.Value]], Sequence[ir.Value]],
) -> list[ir.Value]:
    """Per-element iteration on flat tensors of one length: `step(params, state)` gives
    the next state of each element, which stops at its first state where
    `active(params, state)` is false; the loop runs until every element has stopped.
    `params` are per-element tensors that do not change. A sequential search
    (inversion) is one: each element stops at its own count, the loop at the largest.

    An iteration of the loop costs a count (or an or-reduce) and copies of the state
    beside its steps: it takes _STEPS_PER_ITERATION steps. And like `rejection`'s rounds,
    a step costs as much for a few active elements as for all of them: the loop compacts
    its active elements in the same way (`_compacting`), and scatters their final state
    back. On the CPU, a static length past _CHUNKS_FROM runs chunk by chunk as
    `rejection` does (`_chunked`): 3·10^5 Poissons of mean 3 took 14.8 ms a call whole
    and 5.2 by chunks, 10^6 binomials (20, 0.2) 68.3 and 50.5. (Those samplers now run
    whole by chunks, `_sampled_by_chunks`: 10^6 Poissons of mean 3 48.6 → 14.8 ms,
    10^6 binomials (20, 0.2) 49.6 → 12.9.)"""
    n = shape_of(state[0])[0]
    size = _chunk_size(n)
    if size is None:
        return _evolving(n, list(state), list(params), active, step, active(list(params), list(state)))

    def run(i, params, state):
        # the last chunk's padding (zeros) must not step, whatever `active` says of zeros
        # (masked here: padding `active`'s mask as `rejection` pads `pending` took 3e5
        # Poissons of mean 3 from 5.9-6.0 to 6.5 ms a call)
        lane = iota([size], 0, "int64")
        index = hlo.add(lane, splat(hlo.multiply(i, dim_value(size)), lane))
        real = compare(index, splat(dim_value(n), index), "LT")
        return _evolving(size, state, params, active, step, hlo.and_(active(params, state), real))

    return each_row(n, list(params), list(state), run, size)


def _evolving(n: Dim, state, params, active, step, holds: ir.Value, compacts: bool = True) -> list[ir.Value]:
    """`evolve` over `n` elements, those of `holds` active; compacting as `_compacting`
    does (a static n while it can, a run-time one once) if `compacts`."""
    def steps(limit):
        def body(values):
            holds, *values = values
            for _ in range(_STEPS_PER_ITERATION):
                values = [select(holds, new, old) for new, old in zip(step(params, values), values, strict=True)]
                holds = hlo.and_(holds, active(params, values))
            return [holds, *values]
        return while_loop([holds, *state], lambda values: more_than(values[0], limit), body)

    level = compaction_level(n, _COMPACT_RATIO, COMPACT_MIN) if compacts else None
    if level is None:
        return steps(0)[1:]
    m, limit = level
    holds, *state = steps(limit)

    def compact():
        return in_slots(holds, n, m, state, params, lambda left, state_m, params_m: _evolving(
            m, state_m, params_m, active, step, left, compacts=isinstance(n, int)))

    return compacted_if_pending(m, holds, [x.type for x in state], compact, lambda: state, COMPACT_MIN)


def marsaglia_tsang(key: ir.Value, alpha: ir.Value) -> ir.Value:
    """Gamma(alpha, 1) numbers for alpha >= 1 by Marsaglia and Tsang's (2000) rejection
    of cubed normals; 0 for alpha = 0, inf for inf, NaN for NaN or other alpha < 1.

    A round's normals are `box_muller`'s, of the uniforms the loop carries: with
    `normal_of`'s erfinv, 4,000 gammas of a run-time size took 192 µs a call against
    113, 10^5 2.26 ms against 1.39, and 4,000 betas 400 µs against 248 (in-process A/B,
    best of 5 medians).

    The acceptance test's two logs are `polynomial_log`'s. With rows and chunks it is
    2-6% faster than XLA's libm call (in-process A/B, best of 5 medians): 4,000 gammas
    187 → 176 µs, 10^6 22.6 → 21.8 ms, 4,000 betas 441 → 420 µs, 10^5 betas (0.5, 2)
    5.67 → 5.50 ms. Before them, over whole tensors, it was slower (10^6 gammas 58.1 →
    60.6 ms)."""
    dtype, dims = value_dtype(alpha), shape_of(alpha)
    one = full_like(alpha, 1.0)
    d = hlo.subtract(alpha, full_like(alpha, 1 / 3))
    c = hlo.rsqrt(hlo.multiply(d, full_like(d, 9.0)))

    def propose(params, u_normal, u):
        d, c = params
        x = box_muller(u_normal)
        one = full_like(x, 1.0)
        cube_root = hlo.add(one, hlo.multiply(c, x))
        v = hlo.multiply(hlo.multiply(cube_root, cube_root), cube_root)
        bound = hlo.add(
            hlo.multiply(full_like(x, 0.5), hlo.multiply(x, x)),
            hlo.multiply(d, hlo.add(hlo.subtract(one, v), polynomial_log(v))),
        )
        accepted = hlo.and_(compare(v, full_like(v, 0.0), "GT"), compare(polynomial_log(u), bound, "LT"))
        return hlo.multiply(d, v), accepted

    pending = hlo.and_(hlo.is_finite(alpha), compare(alpha, one, "GE"))
    special = select(
        compare(alpha, full_like(alpha, 0.0), "EQ"), full_like(alpha, 0.0),
        select(compare(alpha, full_like(alpha, np.inf), "EQ"), alpha, full_like(alpha, np.nan)),
    )
    return rejection(key, dims, dtype, uniform_draws(dtype, 2, open_zero=True), propose, [d, c], pending, special)


def gamma_parts(key: ir.Value, alpha: ir.Value) -> tuple[ir.Value, ir.Value]:
    """log G for G ~ Gamma(alpha, 1), as `head + tail / alpha`.

    For alpha < 1, G = G' u^(1/alpha) with G' ~ Gamma(alpha + 1) (Marsaglia and Tsang's
    boost) underflows to 0 for most u once alpha is small (alpha = 1e-3: u < 0.5 in
    float64), though G^(1/p) or sqrt(df / G) are ordinary numbers; in logs, head =
    log G' and tail = log u stay finite. For alpha >= 1 (and NaN, inf, negative
    alpha: NaN, inf, NaN), tail = 0.

    The uniforms u are drawn only where some alpha needs them (`where_some`), as in
    `standard_gamma`. Drawn beside the loop for every alpha, they cost far more than their
    cipher: 4,000 betas (2, 3), which need none, took 696 µs a call with them and 432
    without; 10^5 betas (0.5, 2), which need them, 8.4 ms and 5.9 inside the `if`
    (benchmarks/README.md, "Tails only where needed").
    """
    gamma_key, uniform_key = split(key, 2)
    boosted, draws = _boosted_gamma(gamma_key, alpha)

    def tail():
        u = uniform(uniform_key, shape_of(alpha), value_dtype(alpha), open_zero=True)
        return select(boosted, polynomial_log(u), full_like(u, 0.0))

    return polynomial_log(draws), where_some(boosted, full_like(alpha, 0.0), tail)


def _boosted_gamma(key: ir.Value, alpha: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(boosted, G'): where 0 <= alpha < 1 (boosted), G' ~ Gamma(alpha + 1); elsewhere
    `marsaglia_tsang`'s Gamma(alpha)."""
    one = full_like(alpha, 1.0)
    boosted = hlo.and_(compare(alpha, one, "LT"), compare(alpha, full_like(alpha, 0.0), "GE"))
    return boosted, marsaglia_tsang(key, select(boosted, hlo.add(alpha, one), alpha))


def log_standard_gamma(key: ir.Value, alpha: ir.Value) -> ir.Value:
    """The logs of Gamma(alpha, 1) numbers (`gamma_parts`): finite where the draws
    themselves underflow; alpha = 0 gives -inf."""
    head, tail = gamma_parts(key, alpha)
    return hlo.add(head, divide(tail, alpha))


def standard_gamma(key: ir.Value, alpha: ir.Value) -> ir.Value:
    """Gamma(alpha, 1) numbers (alpha of the output's shape). alpha = 0 gives 0, inf
    gives inf, NaN or negative alpha NaN. For small alpha most draws underflow to 0:
    take `log_standard_gamma` where their logs are what is needed.

    For alpha < 1, Marsaglia and Tsang's boost G' u^(1/alpha) (`gamma_parts`), its
    uniforms drawn only when some alpha needs them: for alpha >= 1 the draw is the
    loop's, with no uniform, log and exp over the tensor besides."""
    gamma_key, uniform_key = split(key, 2)
    boosted, draws = _boosted_gamma(gamma_key, alpha)

    def boost():
        u = uniform(uniform_key, shape_of(alpha), value_dtype(alpha), open_zero=True)
        return select(boosted, hlo.multiply(draws, hlo.exponential(divide(polynomial_log(u), alpha))), draws)

    return where_some(boosted, draws, boost)


def beta_log_odds(key: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    """log(X / (1 - X)) for X ~ Beta(a, b): log Ga - log Gb from two gammas in logs, so
    X = logistic of it and 1 - X = logistic of its negation, each to full precision.

    numpy switches to Johnk's method for a, b <= 1 because both gammas then underflow
    and Ga / (Ga + Gb) is 0/0; their logs do not. The difference d = (hb - ha) +
    tb / b - ta / a (`gamma_parts`) is computed times m = min(1, a, b) and divided by
    it last, so for tiny a and b the two huge tails never meet as inf - inf: d may
    overflow to +-inf only with its right sign. Both gammas come from one loop over a
    and b stacked (each rejection loop costs about a second of XLA compile time).
    """
    (ha, hb), (ta, tb) = (unstack(x, 2) for x in gamma_parts(key, stack([a, b])))
    m = hlo.minimum(full_like(a, 1.0), hlo.minimum(a, b))
    scaled = hlo.add(
        hlo.multiply(hlo.subtract(ha, hb), m),
        hlo.subtract(hlo.multiply(ta, divide(m, a)), hlo.multiply(tb, divide(m, b))),
    )
    return divide(scaled, m)


# --- the rule every RandomVariable shares ----------------------------------------------

Sampler = Callable[..., ir.Value]


def batch_dims(node, size, params) -> list[Dim]:
    """The batch dims of the draws: `size` where given, else the broadcast of the
    parameters' batch dims (`_param_dim`). Static dims that cannot broadcast raise
    numpy's ValueError when the function is built (`_check_static_broadcast`)."""
    op = node.op
    out_shape = node.outputs[1].type.shape
    n = op.batch_ndim(node)
    _check_static_broadcast(node, out_shape[:n] if size is not None else None, params, n)
    dims: list[Dim] = []
    for d in range(n):
        if out_shape[d] is not None:
            dims.append(out_shape[d])
        elif size is not None:
            dims.append(vector_element(size, d))
        else:
            dims.append(_param_dim(node, params, d, n))
    if size is not None and _size_from_array(node):
        dims = _measured_dims(dims)
    return dims


def _check_static_broadcast(node, size_dims, params, n: int) -> None:
    """numpy's "shape mismatch" for a parameter whose static batch dims do not fit
    `size` (or, without one, another parameter's): raised when the function is built,
    since a broadcast between such static dims is not valid IR."""
    shapes = [] if size_dims is None else [("size", tuple(size_dims))]
    for i, (p, core) in enumerate(zip(params, node.op.ndims_params)):
        shape = static_shape(p.type)
        shapes.append((f"parameter {i}", tuple(shape[:len(shape) - core])))
    for d in range(1, n + 1):
        fixed = None  # (what, shape) giving axis -d a size other than 1, or size's own
        for what, shape in shapes:
            dim = shape[-d] if d <= len(shape) else 1
            if dim is None or (dim == 1 and what != "size"):
                continue
            if fixed is None:
                fixed = (what, shape)
            elif dim != fixed[1][-d]:
                raise ValueError(
                    "shape mismatch: objects cannot be broadcast to a single shape. Mismatch is "
                    f"between {fixed[0]} with shape {_shape_text(fixed[1])} and {what} with "
                    f"batch shape {_shape_text(shape)}"
                )


def _shape_text(shape) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + (",)" if len(shape) == 1 else ")")


def _size_from_array(node) -> bool:
    """Whether `size` is computed from an input with dims (a vector of sizes): the
    runtime specializes on the values of 0-d inputs only, so such a size is measured
    at run time (`_measured_dims`)."""
    roots = graph_inputs([node.inputs[1]])
    return any(getattr(r.type, "ndim", 0) > 0 for r in roots if not isinstance(r, Constant))


def _measured_dims(dims: Sequence[Dim]) -> list[Dim]:
    """`dims` read back from one tensor of that shape. The runtime measures the shape
    operands of such top-level dynamic ops and binds them as constants, which makes
    that tensor static and these reads constants; the dims themselves, used in a
    rejection loop's body, would stay values computed from the input there."""
    if is_static(dims):
        return list(dims)
    anchor = full(0, dims, "int8")
    return [d if isinstance(d, int) else convert(hlo.get_dimension_size(anchor, i), "int64")
            for i, d in enumerate(dims)]


def param_batch_dims(node, params) -> list[Dim]:
    """The broadcast of the parameters' batch dims alone (without `size`)."""
    n = max((len(static_shape(p.type)) - core for p, core in zip(params, node.op.ndims_params)), default=0)
    return [_param_dim(node, params, d, n) for d in range(n)]


def _param_dim(node, params, d: int, n: int) -> Dim:
    """numpy's broadcast of the parameters' sizes along batch axis d: a static size
    other than 1 where one is known, else the first of the run-time sizes that is not
    1 (a parameter of size 1 at run time broadcasts, as in numpy), else 1."""
    sizes = []
    for p, core in zip(params, node.op.ndims_params):
        batch = len(static_shape(p.type)) - core
        axis = d - (n - batch)
        if axis >= 0 and static_shape(p.type)[axis] != 1:
            size = dim_size(p, axis)
            if isinstance(size, int):
                if size != 1:
                    return size
            else:
                sizes.append(size)
    if not sizes:
        return 1
    one = dim_value(1)
    return functools.reduce(lambda dim, size: select(compare(dim, one, "EQ"), size, dim), sizes)


def broadcast_param(p: ir.Value, batch: Sequence[Dim], core: int) -> ir.Value:
    """A parameter broadcast to the batch dims, its `core` trailing dims kept."""
    shape = shape_of(p)
    rank = len(shape)
    dims = list(batch) + list(shape[rank - core:])
    return broadcast_in_dim(p, dims, range(len(dims) - rank, len(dims)))


def require(ctx, failed: ir.Value, message: str, error: type = ValueError) -> None:
    """numpy's parameter check: raise `error(message)` when any element of `failed` holds.
    Inside a loop body (a Scan step) nothing can be raised; the draws are then NaN or
    whatever the sampler gives for such parameters."""
    if ctx.can_raise():
        ctx.runtime_check(any_true(failed), error, message)


def scipy_domain_error(name: str) -> str:
    """The message of scipy.stats' `rvs` when a parameter is outside the domain."""
    return (
        "Domain error in arguments. The `scale` parameter must be positive for all "
        "distributions, and many distributions have restrictions on shape parameters. "
        f"Please see the `scipy.stats.{name}` documentation for details."
    )


def register_sampler(*op_classes, checks: Callable | None = None, checks_see_draws: bool = False):
    """Register `sampler(key, dims, *params)` for the RandomVariable classes.

    The sampler gets the key for its draws, the output's batch dims and the
    parameters broadcast to them (core dims kept), in the work dtype of the output
    (`work_dtype`); for integer draws, real parameters in float64 and integer ones
    as int64.
    `checks(ctx, node, *params)` adds numpy's parameter checks; it sees the parameters
    as given, in float64 (int64 for integer ones of integer draws), broadcast to each
    other only: numpy checks them before drawing `size` numbers (and XLA would fold
    checks of constant parameters over the whole output otherwise). With
    `checks_see_draws` it also gets `drawing=`, a 0-d bool: whether there is any draw
    (numpy's `integers` checks nothing when `size` has a 0).
    """
    def decorate(sampler: Sampler) -> Sampler:
        def rule(ctx, node, key, size, *params):
            next_key, draw_key = node_keys(key)
            out_dtype = node.outputs[1].type.dtype
            real = np.dtype(out_dtype).kind == "f"
            dtype = work_dtype(out_dtype) if real else "float64"
            cores = node.op.ndims_params
            batch = batch_dims(node, size, params)
            if checks is not None:  # in float64 (or int64): numpy checks before any cast
                own = param_batch_dims(node, params)
                extra = {}
                if checks_see_draws:
                    extra["drawing"] = compare(dim_value(dim_product(batch)), dim_value(0), "NE")
                checks(ctx, node, *(
                    broadcast_param(convert(p, "float64" if real or _is_float(p) else "int64"), own, core)
                    for p, core in zip(params, cores)
                ), **extra)
            params = [convert(_opaque(p), dtype if real or _is_float(p) else "int64") for p in params]
            token = _CPU_LOOPS.set(ctx.options.platform == "cpu")
            try:
                draws = _sampled(sampler, draw_key, node, batch, params, out_dtype)
            finally:
                _CPU_LOOPS.reset(token)
            return next_key, draws

        functools.update_wrapper(rule, sampler)  # the family of the sampler's module
        for cls in op_classes:
            register_lowering(cls)(rule)
        return sampler

    return decorate


def _sampled(sampler: Sampler, key, node, batch: Sequence[Dim], params, dtype) -> ir.Value:
    """`sampler`'s draws for the node, in `dtype`: over the whole batch, or chunk by chunk
    (`_sampled_by_chunks`) where each draw is a scalar of scalar parameters, the sampler
    loops (`_loops_in`), and the batch is static and past _CHUNKS_FROM, on the CPU
    (`_chunk_size`)."""
    cores = node.op.ndims_params
    size = _chunk_size(dim_product(batch)) if node.op.ndim_supp == 0 and not any(cores) else None
    if size is None or not _loops_in(sampler, tuple(value_dtype(p) for p in params)):
        return convert(sampler(key, batch, *(broadcast_param(p, batch, core) for p, core in zip(params, cores))), dtype)
    return _sampled_by_chunks(sampler, key, batch, size, params, dtype)


@functools.cache
def _loops_in(sampler: Sampler, dtypes: tuple[str, ...]) -> bool:
    """Whether `sampler` builds a loop (a rejection loop, a search, `written`'s loop of
    one trip unless not `counted`) for parameters of these dtypes: lowered once, over a
    row of elements, into a module of its own."""
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):
        types = [tensor_type(KEY_SHAPE, KEY_DTYPE)] + [tensor_type((ROW_LANES,), d) for d in dtypes]
        block = func.FuncOp("probe", ir.FunctionType.get(types, [])).add_entry_block()
    uncounted = []
    token = _UNCOUNTED.set(uncounted)
    try:
        with ir.InsertionPoint(block):
            sampler(block.arguments[0], [ROW_LANES], *block.arguments[1:])
    finally:
        _UNCOUNTED.reset(token)
    loops = False

    def visit(op):
        nonlocal loops
        loops = op.name == "stablehlo.while" and not any(op == u for u in uncounted)
        return ir.WalkResult.INTERRUPT if loops else ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return loops


def _sampled_by_chunks(sampler: Sampler, key, batch: Sequence[int], size: int, params, dtype) -> ir.Value:
    """An elementwise sampler's draws over a static batch of n elements, by a loop over
    chunks of `size` (`_chunk_size`): chunk i runs the whole sampler, its rejection loops
    and searches included, over its slice of each parameter, under the i-th key of
    `split(key, chunks)`. Whole, a sampler streams every tensor of its rounds through
    memory, and past this machine's L3 each costs twice as much an element
    (benchmarks/README.md, "Samplers by chunks").

    No tensor is padded: the last chunk starts at n - size (XLA clamps the starts), its
    elements shared with the chunk before get its draws. A parameter of one element is
    broadcast in each chunk, never to n. The sampler's Threefry outside its own loops
    stays unrolled (`_in_loop`)."""
    n = math.prod(batch)
    one = [all(d == 1 for d in static_shape(p.type)) for p in params]
    flat = [reshape(p, []) if o else reshape(broadcast_param(p, batch, 0), [n]) for p, o in zip(params, one)]
    size_value = dim_value(size)

    def body(values):
        # Chunk i's draws are written in iteration i + 1 (the first iteration writes the
        # initial zeros at 0, where XLA clamps -size; the last chunk's draws are written
        # after the loop): draws computed into the write would make one
        # dynamic_update_slice fusion, which XLA:CPU runs on one thread (3·10^5 Student's
        # t (4) took 12.9 ms a call so, 10.1 this way).
        i, out, last = values
        start = hlo.multiply(i, size_value)
        out = hlo.dynamic_update_slice(out, last, [hlo.subtract(start, size_value)])
        chunk = [broadcast_to(p, [size]) if o else dynamic_index(p, [0], [start], [size]) for p, o in zip(flat, one)]
        token = _CHUNK_LOOP.set(ir.InsertionPoint.current.block.owner.operation)
        try:
            draws = convert(sampler(key_at(key, i), [size], *chunk), dtype)
        finally:
            _CHUNK_LOOP.reset(token)
        return [hlo.add(i, ir_constant(np.int64(1))), out, draws]

    count = dim_value(-(-n // size))
    init = [ir_constant(np.int64(0)), full(0, [n], dtype), full(0, [size], dtype)]
    _, out, last = while_loop(init, lambda values: compare(values[0], count, "LT"), body)
    return reshape(hlo.dynamic_update_slice(out, last, [dim_value(n - size)]), batch)


def _is_float(x: ir.Value) -> bool:
    return value_dtype(x).startswith("float")


def _opaque(x: ir.Value) -> ir.Value:
    """A constant parameter hidden from XLA's constant folder: broadcast to a large
    `size`, the sampler's whole elementwise chain would be folded at compile time
    (seconds, for values computed at run time in microseconds)."""
    if isinstance(x, ir.OpResult) and x.owner.name == "stablehlo.constant":
        return hlo.optimization_barrier([x])
    return x


def node_keys(key) -> tuple[ir.Value, ir.Value]:
    """A RandomVariable node's (next_rng key, key for its draws) from its rng operand:
    a key, or a constant Generator (whose key is peeked at lowering)."""
    if isinstance(key, np.random.Generator):
        key = ir_constant(peek_key(key))
    return tuple(split(key, 2))


def negative(x: ir.Value) -> ir.Value:
    """numpy's "< 0" parameter check: on the sign bit, so -0.0 fails and NaN passes."""
    return hlo.and_(signbit(x), compare(x, x, "EQ"))


def _scale_checks(ctx, node, *params):
    require(ctx, negative(params[-1]), "scale < 0")


# --- samplers made directly from uniform and normal numbers -----------------------------


def _uniform_checks(ctx, node, low, high):
    """numpy's checks of high - low (in float64): finite, then not negative on the sign
    bit (-0.0 - 0.0 fails). numpy words the first "high - low range exceeds valid
    bounds" when both bounds are 0-d, "Range exceeds valid bounds" for arrays."""
    span = hlo.subtract(high, low)
    scalar = all(p.type.ndim == 0 for p in node.op.dist_params(node))
    overflow = "high - low range exceeds valid bounds" if scalar else "Range exceeds valid bounds"
    require(ctx, hlo.not_(hlo.is_finite(span)), overflow, OverflowError)
    require(ctx, negative(span), "high - low < 0")


@register_sampler(rv.UniformRV, checks=_uniform_checks)
def _uniform(key, dims, low, high):
    u = uniform(key, dims, value_dtype(low))
    return hlo.add(low, hlo.multiply(hlo.subtract(high, low), u))


def _gamma_checks(ctx, node, shape, scale):
    require(ctx, negative(shape), "shape < 0")
    require(ctx, negative(scale), "scale < 0")


@register_sampler(rv.GammaRV, checks=_gamma_checks)
def _gamma(key, dims, shape, scale):
    return hlo.multiply(standard_gamma(key, shape), scale)


@register_sampler(rv.NormalRV, checks=_scale_checks)
def _normal(key, dims, loc, scale):
    return hlo.add(loc, hlo.multiply(scale, normal(key, dims, value_dtype(loc))))
