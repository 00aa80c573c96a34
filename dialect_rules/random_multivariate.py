"""Multivariate RandomVariables and random orderings: Dirichlet, multivariate normal,
permutations, and the Ops `pt.random.choice` builds (ChoiceWithoutReplacement;
CategoricalRV and IntegersRV for draws with replacement).

Every sampler takes its numbers from the core's Threefry key (`dialect_rules.random`);
the streams are not numpy's, the distributions are. numpy's parameter errors are
raised at call time with its messages (`require`).
"""

from __future__ import annotations

import numpy as np
from jax.extend.mlir import ir
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.tensor.random import basic as rv

from dialect_rules.linalg import (
    _along,
    _dims_differ,
    _failed,
    _svd_parts,
    _i1,
    _matmul,
    _matrix_dims,
    _mT,
    _potrf,
    _set_diagonal,
    _solve_triangular,
    _syevd,
    _triangle,
)
from dialect_rules.random import (
    batch_dims,
    bits,
    broadcast_param,
    exponential,
    log_standard_gamma,
    node_keys,
    normal,
    register_sampler,
    require,
    split,
    uniform,
    work_dtype,
)
from lowering.builders import (
    broadcast_in_dim,
    compare,
    convert,
    dim_max,
    dim_product,
    dim_size,
    dim_sub,
    dim_value,
    divide,
    dot_general,
    full,
    full_like,
    identity_matrix,
    iota,
    is_nan,
    polynomial_log,
    reshape,
    select,
    shape_of,
    slice_axis,
    static_slice,
    transpose,
    value_dtype,
    vector_element,
)
from lowering.errors import UnsupportedParameterError
from lowering.regions import cumulative, fold, sort
from lowering.registry import register_lowering
from lowering.types import static_shape


def _last_axis(x: ir.Value) -> int:
    return len(static_shape(x.type)) - 1


def _expand_last(x: ir.Value, like: ir.Value) -> ir.Value:
    """x (one dim fewer than `like`) broadcast along like's last axis."""
    return broadcast_in_dim(x, shape_of(like), range(_last_axis(like)))


def _rule_start(ctx, node, key, size, params):
    """What every rule here begins with: the next key and the draw key, the batch dims,
    and the output dims where PyTensor knows them statically (None elsewhere)."""
    next_key, draw_key = node_keys(key)
    return next_key, draw_key, batch_dims(node, size, params), node.outputs[1].type.shape


# --- Dirichlet ---------------------------------------------------------------------


def _dirichlet_checks(ctx, node, alpha):
    require(ctx, compare(alpha, full_like(alpha, 0.0), "LT"), "alpha < 0")


@register_sampler(rv.DirichletRV, checks=_dirichlet_checks)
def _dirichlet(key, dims, alpha):
    """Normalized Gamma(alpha_i) numbers, normalized in log space.

    log G(alpha) (the core's `log_standard_gamma`: Marsaglia and Tsang's boost kept in
    logs) stays finite where G(alpha) itself underflows to 0 (alpha below
    ~0.01 in float32), so a softmax over the core axis never divides 0 by 0: numpy's
    reason to switch to beta stick-breaking for small alphas (max(alpha) < 0.1). As in
    numpy, alpha = 0 gives 0, all alphas 0 give zeros, an infinite alpha gives NaN
    there and 0 elsewhere, a NaN alpha NaN everywhere. (XLA flushes subnormal numbers
    to zero: a subnormal alpha counts as 0.)
    """
    log_g = log_standard_gamma(key, alpha)
    axis = _last_axis(alpha)
    top = _expand_last(fold(log_g, [axis], hlo.maximum, -np.inf), log_g)
    weights = hlo.exponential(hlo.subtract(log_g, top))
    x = divide(weights, _expand_last(fold(weights, [axis], hlo.add, 0.0), weights))
    infinite = compare(log_g, full_like(log_g, np.inf), "EQ")
    x = select(compare(top, full_like(top, np.inf), "EQ"), select(infinite, full_like(x, np.nan), full_like(x, 0.0)), x)
    return select(compare(top, full_like(top, -np.inf), "EQ"), full_like(x, 0.0), x)


# --- multivariate normal -----------------------------------------------------------


def _mv_normal_factor(ctx, method: str, cov: ir.Value) -> ir.Value:
    """A with A A^T = cov, as PyTensor's perform makes it: numpy's cholesky (lower
    triangle; LinAlgError where it fails), svd (U sqrt(s)) or eigh (V sqrt(w), NaN
    columns for negative eigenvalues); LAPACK through `dialect_rules.linalg`."""
    if method == "cholesky":
        factor, ok = _potrf(ctx, cov, lower=True)
        [factor] = _failed(ctx, ok, [factor], "Matrix is not positive definite")
        return factor
    if method == "svd":
        s, u, _, ok = _svd_parts(ctx, cov, "S")
        u, s = _failed(ctx, ok, [u, s], "SVD did not converge")
        scale, columns = s, u
    else:
        w, v, ok = _syevd(ctx, cov, lower=True, vectors=True)
        w, v = _failed(ctx, ok, [w, v], "Eigenvalues did not converge")
        scale, columns = w, v
    rank = len(static_shape(columns.type))
    root = broadcast_in_dim(hlo.sqrt(scale), shape_of(columns), [*range(rank - 2), rank - 1])
    return hlo.multiply(columns, root)


@register_lowering(rv.MvNormalRV)
def _mv_normal(ctx, node, key, size, mean, cov):
    """mean + A z for standard normal z (A from `_mv_normal_factor`). The covariance is
    factored at its own batch shape, before broadcasting to `size`: one factorization
    serves every draw of an unbatched covariance."""
    next_key, draw_key, batch, out_shape = _rule_start(ctx, node, key, size, [mean, cov])
    dtype = work_dtype(node.outputs[1].type.dtype)
    mean, cov = convert(mean, dtype), convert(cov, dtype)
    rows, n = _matrix_dims(cov)
    m = dim_size(mean, _last_axis(mean))
    if not (rows == n and n == m):  # a numpy error and shapes that do not fit the graph
        require(ctx, _i1(_dims_differ(rows, n)), "Last 2 dimensions of the array must be square", np.linalg.LinAlgError)
        require(ctx, _i1(_dims_differ(n, m)), "mean and cov must have the same length")
    factor = _mv_normal_factor(ctx, node.op.method, cov)
    n = out_shape[-1] if out_shape[-1] is not None else n
    z = normal(draw_key, [*batch, n], dtype)
    rank = len(batch) + 1
    if len(static_shape(factor.type)) == 2:  # (..., j) x (i, j) -> (..., i)
        spread = dot_general(z, factor, ((rank - 1,), (1,)))
    else:
        factor = broadcast_param(factor, batch, 2)
        spread = dot_general(factor, z, ((rank,), (rank - 1,)), (tuple(range(rank - 1)),) * 2)
    draws = hlo.add(broadcast_param(mean, batch, 1), spread)
    return next_key, convert(draws, node.outputs[1].type.dtype)


# --- PyMC's matrix-variate RandomVariables (registered by name: PyMC is not imported) -----

_PYMC = "pymc.distributions.multivariate."


@register_lowering(_PYMC + "MatrixNormalRV")
def _matrix_normal(ctx, node, key, size, mu, rowchol, colchol):
    """PyMC's rng_fn: mu + rowchol Z colchol^T for a standard normal m x n matrix Z."""
    next_key, draw_key, batch, out_shape = _rule_start(ctx, node, key, size, [mu, rowchol, colchol])
    out_dtype = node.outputs[1].type.dtype
    dtype = work_dtype(out_dtype)
    mu, rowchol, colchol = (broadcast_param(convert(x, dtype), batch, 2) for x in (mu, rowchol, colchol))
    m = out_shape[-2] if out_shape[-2] is not None else dim_size(rowchol, len(batch))
    n = out_shape[-1] if out_shape[-1] is not None else dim_size(colchol, len(batch))
    z = normal(draw_key, [*batch, m, n], dtype)
    spread = _matmul(_matmul(rowchol, z, len(batch)), _mT(colchol), len(batch))
    return next_key, convert(hlo.add(mu, spread), out_dtype)


_WISHART_DF = "Degrees of freedom must be greater than the dimension of scale matrix minus 1."


@register_lowering(_PYMC + "WishartRV")
def _wishart(ctx, node, key, size, nu, v):
    """scipy's wishart(int(nu), V): Bartlett's (C A)(C A)^T, C the Cholesky factor of V
    and A lower triangular with N(0, 1) below the diagonal and sqrt(chi2(df - i)) on it,
    the chi-squares 2 G((df - i) / 2) taken from log G (`log_standard_gamma`). As the
    rng_fn, nu truncates to an integer (NaN and inf refused as int() refuses them) and V
    that is not positive definite raises LinAlgError."""
    next_key, draw_key, batch, out_shape = _rule_start(ctx, node, key, size, [nu, v])
    out_dtype = node.outputs[1].type.dtype
    dtype = work_dtype(out_dtype)
    nu, v = convert(nu, "float64"), convert(v, dtype)
    p = out_shape[-1] if out_shape[-1] is not None else dim_size(v, len(static_shape(v.type)) - 1)
    require(ctx, is_nan(nu), "cannot convert float NaN to integer")
    require(ctx, compare(hlo.abs(nu), full_like(nu, np.inf), "EQ"), "cannot convert float infinity to integer", OverflowError)
    df = convert(convert(nu, "int64"), dtype)  # int(): toward zero
    last = broadcast_in_dim(convert(dim_value(p), dtype), shape_of(df), [])
    require(ctx, compare(df, hlo.subtract(last, full_like(last, 1.0)), "LE"), _WISHART_DF)
    chol, ok = _potrf(ctx, v, lower=True)
    [chol] = _failed(ctx, ok, [chol], "the scale matrix V is not positive definite")
    chol, df = broadcast_param(chol, batch, 2), broadcast_param(df, batch, 0)

    normal_key, gamma_key = split(draw_key, 2)
    z = normal(normal_key, [*batch, p, p], dtype)
    step = convert(iota([*batch, p], len(batch), "int64"), dtype)
    alpha = hlo.multiply(hlo.subtract(broadcast_in_dim(df, shape_of(step), range(len(batch))), step), full_like(step, 0.5))
    log_chi2 = hlo.add(log_standard_gamma(gamma_key, alpha), full_like(alpha, np.log(2.0)))
    root = hlo.exponential(hlo.multiply(log_chi2, full_like(log_chi2, 0.5)))
    a = _set_diagonal(_triangle(z, lower=True, k=-1), 0, full(True, shape_of(root), "bool"), root)
    factor = _matmul(chol, a, len(batch))
    return next_key, convert(_matmul(factor, _mT(factor), len(batch)), out_dtype)


@register_lowering(_PYMC + "StickBreakingWeightsRV")
def _stick_breaking_weights(ctx, node, key, size, alpha, k):
    """PyMC's rng_fn: K Beta(1, alpha) fractions b_i broken off what remains of the
    stick, w_i = b_i prod_{j<i} (1 - b_j), and the rest as the (K+1)-th weight. The
    fractions are inverted in logs, log(1 - b) = log1p(-u) / alpha, so the products are
    exponentials of sums and the last weight is the product itself (the rng_fn's
    1 - sum(w) is that number less its rounding)."""
    next_key, draw_key, batch, out_shape = _rule_start(ctx, node, key, size, [alpha, k])
    out_dtype = node.outputs[1].type.dtype
    dtype = work_dtype(out_dtype)
    k = reshape(convert(k, "int64"), [])
    require(ctx, compare(k, full_like(k, 0), "LT"), "K needs to be positive.")
    alpha64 = convert(alpha, "float64")
    require(ctx, compare(alpha64, full_like(alpha64, 0.0), "LE"), "b <= 0")  # numpy's beta(1, alpha)
    # a negative K still makes a shape, so the check above can say what is wrong
    count = out_shape[-1] - 1 if out_shape[-1] is not None else hlo.maximum(k, full_like(k, 0))
    alpha = broadcast_param(convert(alpha, dtype), batch, 0)
    u = uniform(draw_key, [*batch, count], dtype, open_zero=True)
    axis = len(batch)
    log_rest = divide(hlo.log_plus_one(hlo.negate(u)), _expand_last(alpha, u))  # log(1 - b)
    zero, one = (full(value, [*batch, 1], dtype) for value in (0.0, 1.0))
    # log prod_{j<i} (1 - b_j) for i = 0..K: a cumulative sum with a 0 in front
    remaining = cumulative(hlo.concatenate([zero, log_rest], axis), axis, hlo.add, 0.0)
    fraction = hlo.concatenate([hlo.negate(hlo.exponential_minus_one(log_rest)), one], axis)
    return next_key, convert(hlo.multiply(fraction, hlo.exponential(remaining)), out_dtype)


_CAR_PRECISION = "the CAR precision tau (D - alpha W) is not positive definite"


def _squeezed(node, x: ir.Value, core: int) -> ir.Value:
    """x without its leading dims, which must all be 1 (PyMC adds them for `size`)."""
    shape = static_shape(x.type)
    if any(d != 1 for d in shape[: len(shape) - core]):
        raise UnsupportedParameterError(node, "batched W, alpha or tau", "only mu may carry batch dims")
    return reshape(x, shape_of(x)[len(shape) - core:])


@register_lowering(_PYMC + "CARRV")
def _car(ctx, node, key, size, mu, w, alpha, tau, w_is_valid):
    """N(mu, Q^-1) for the precision CAR's logp means, Q = tau (D - alpha W) with D the
    diagonal of W's column sums: x = mu + L^-T z for Q = L L^T (Rue 2001), one Cholesky
    factorization per (W, alpha, tau) and one triangular solve for all draws.

    PyMC's rng_fn solves with Q itself (`cho_solve_banded`), so its draws have covariance
    Q^-2 (README, "Where we knowingly differ"); its parameter errors are raised here as
    there. A sparse constant W is densified: the factor is dense anyway."""
    next_key, draw_key, batch, out_shape = _rule_start(ctx, node, key, size, [mu, w, alpha, tau])
    out_dtype = node.outputs[1].type.dtype
    dtype = work_dtype(out_dtype)
    if not isinstance(w, ir.Value):  # a scipy.sparse constant
        w = ctx.constant(w.toarray(), dtype)
    require(ctx, hlo.not_(w_is_valid), "W must be a valid adjacency matrix")
    alpha64 = convert(alpha, "float64")
    outside = hlo.or_(compare(alpha64, full_like(alpha64, 1.0), "GE"), compare(alpha64, full_like(alpha64, -1.0), "LE"))
    require(ctx, outside, "the domain of alpha is: -1 < alpha < 1")
    # the rng_fn squeezes W to one matrix and alpha, tau to numbers (a batch fails there)
    w, alpha, tau = (_squeezed(node, convert(x, dtype), core) for x, core in ((w, 2), (alpha, 0), (tau, 0)))
    mu = convert(mu, dtype)

    dims = shape_of(w)
    d = hlo.multiply(identity_matrix(dims, dtype), _along(fold(w, [0], hlo.add, 0.0), dims, 1))  # W's column sums
    spread = lambda x: broadcast_in_dim(x, dims, [])  # noqa: E731
    q = hlo.multiply(spread(tau), hlo.subtract(d, hlo.multiply(spread(alpha), w)))
    factor, ok = _potrf(ctx, q, lower=True)
    [factor] = _failed(ctx, ok, [factor], _CAR_PRECISION)

    m = out_shape[-1] if out_shape[-1] is not None else dims[-1]
    z = normal(draw_key, [*batch, m], dtype)
    # one factor for every draw: L^T X = Z for all draws at once, Z's columns the draws
    columns = transpose(reshape(z, [dim_product(batch), m]), [1, 0])
    solved = _solve_triangular(ctx, factor, columns, lower=True, transpose="TRANSPOSE")
    x = reshape(transpose(solved, [1, 0]), [*batch, m])
    return next_key, convert(hlo.add(broadcast_param(mu, batch, 1), x), out_dtype)


# --- random orderings: permutation, choice without replacement ----------------------


def _ordered(keys: ir.Value, values: ir.Value, axis: int) -> ir.Value:
    """`values` reordered along `axis` by ascending `keys` (broadcast over the trailing
    dims); the sort is stable, so tied keys keep the index order."""
    keys = broadcast_in_dim(keys, shape_of(values), range(axis + 1))
    return sort([keys, values], axis, lambda a, b: compare(a[0], b[0], "LT"))[1]


def _uniform_keys(key, dims, valid: ir.Value | None) -> ir.Value:
    """64 random bits per position: sorting by them is a uniformly random order (ties,
    2^-64 per pair, go to the lower index). Undrawable positions sort last."""
    keys = bits(key, dims)
    if valid is not None:
        keys = select(valid, keys, full_like(keys, np.iinfo(np.uint64).max))
    return keys


def _gumbel_keys(key, p: ir.Value, batch) -> ir.Value:
    """log(E) - log(p) for standard exponential E, p broadcast to the batch: ascending,
    the Gumbel-top-k order (Efraimidis and Spirakis, 2006), i.e. successive draws
    without replacement with probabilities proportional to p, numpy's distribution.
    p = 0 sorts last."""
    log_p = broadcast_param(polynomial_log(p), batch, 1)
    e = exponential(key, shape_of(log_p), value_dtype(p))
    return hlo.subtract(polynomial_log(e), log_p)


def _first_element(x: ir.Value) -> ir.Value:
    """x.ravel()[0] as a 0-d value."""
    rank = len(static_shape(x.type))
    return reshape(static_slice(x, [0] * rank, [1] * rank), ())


@register_lowering(rv.PermutationRV)
def _permutation(ctx, node, key, size, x):
    """A random order of x's first core axis (of arange(x) for an integer x, as numpy):
    a stable sort by random 64-bit keys, every row of x moved with its key."""
    next_key, draw_key, batch, out_shape = _rule_start(ctx, node, key, size, [x])
    axis = len(batch)
    out_dtype = node.outputs[1].type.dtype
    if node.op.ndims_params[0] == 0:
        # numpy permutes arange(x); PyTensor reads the first x of a batch of them.
        n = out_shape[axis] if out_shape[axis] is not None else dim_max(convert(_first_element(x), "int64"), 0)
        values = iota([*batch, n], axis, out_dtype)
    else:
        values = broadcast_param(x, batch, node.op.ndims_params[0])
        n = dim_size(values, axis)
    return next_key, _ordered(_uniform_keys(draw_key, [*batch, n], None), values, axis)


def _core_shape_row(core_shape: ir.Value) -> ir.Value:
    """choice's `size` vector; PyTensor reads the first row of a batch of them."""
    rank = len(static_shape(core_shape.type))
    length = static_shape(core_shape.type)[-1]
    return reshape(static_slice(core_shape, [0] * rank, [1] * (rank - 1) + [length]), [length])


def _padded(x: ir.Value, axis: int, k) -> ir.Value:
    """x with zeros appended along `axis` up to length k: a sample larger than the
    population raises numpy's error at call time, and until then its shapes must fit."""
    short = dim_max(dim_sub(k, dim_size(x, axis)), 0)
    if isinstance(short, int) and short == 0:
        return x
    dims = list(shape_of(x))
    dims[axis] = short
    return hlo.concatenate([x, full(0, dims, value_dtype(x))], axis)


def _probability_checks(ctx, node, p: ir.Value):
    """numpy's checks of p in `Generator.choice` (p converted to float64, its sum
    within sqrt(eps) of 1, eps of p's own float type where wider)."""
    axis = _last_axis(p)
    p_dtype = np.dtype(node.inputs[3].type.dtype)
    atol = np.sqrt(np.finfo(np.float64).eps)
    if p_dtype.kind == "f":
        atol = max(atol, np.sqrt(np.finfo(p_dtype).eps))
    require(ctx, is_nan(p), "Probabilities contain NaN")
    # numpy's Kahan sum turns an infinity before the last element into NaN.
    head = slice_axis(p, axis, 0, dim_max(dim_sub(dim_size(p, axis), 1), 0))
    require(ctx, compare(hlo.abs(head), full_like(head, np.inf), "EQ"), "Probabilities contain NaN")
    require(ctx, compare(p, full_like(p, 0.0), "LT"), "Probabilities are not non-negative")
    off = hlo.abs(hlo.subtract(fold(p, [axis], hlo.add, 0.0), full(1.0, shape_of(p)[:axis], "float64")))
    require(ctx, compare(off, full_like(off, atol), "GT"),
            "Probabilities do not sum to 1. See Notes section of docstring for more information.")


@register_lowering(rv.ChoiceWithoutReplacement)
def _choice_without_replacement(ctx, node, key, size, a, *params):
    """numpy's `choice(a, size, replace=False, p)`: the first prod(size) entries of a
    random order of a's first core axis (of arange(a) for an integer a): by uniform
    64-bit keys, or by Gumbel keys with `p` (`_gumbel_keys`).

    numpy's checks come in numpy's order (the first that fails is raised), on the
    parameters at their own shapes, as is everything computed from them alone."""
    p, core_shape = params if node.op.has_p_param else (None, params[0])
    operands = [a, core_shape] if p is None else [a, p, core_shape]
    next_key, draw_key, batch, out_shape = _rule_start(ctx, node, key, size, operands)
    axis = len(batch)
    row = _core_shape_row(core_shape)
    # The sample's own dims (choice's size), static where PyTensor knows them; a negative
    # one is raised below and taken as 0 until then, so every shape stays valid.
    core = [
        out_shape[axis + i] if out_shape[axis + i] is not None else dim_max(vector_element(row, i), 0)
        for i in range(static_shape(row.type)[0])
    ]
    k = dim_product(core)

    def versus(x, dim, direction):  # x compared with a dim, elementwise
        return compare(x, broadcast_in_dim(dim_value(dim), shape_of(x), ()), direction)

    if node.op.ndims_params[0] == 0:  # the population is arange(a)
        if np.dtype(node.inputs[2].type.dtype).kind not in "iub":
            require(ctx, full(True, (), "bool"), "a must be a sequence or an integer, not <class 'numpy.ndarray'>")
        pop = convert(a, "int64")
        empty, message = compare(pop, full_like(pop, 0), "LE"), "a must be a positive integer unless no samples are taken"
    else:
        pop = dim_value(dim_size(a, len(static_shape(a.type)) - node.op.ndims_params[0]))
        empty, message = compare(pop, full_like(pop, 0), "EQ"), "a cannot be empty unless no samples are taken"
    require(ctx, hlo.and_(empty, broadcast_in_dim(_i1(_dims_differ(k, 0)), shape_of(empty), ())), message)
    if p is not None:
        p = convert(p, "float64")
        require(ctx, versus(pop, dim_size(p, _last_axis(p)), "NE"), "a and p must have same size")
        _probability_checks(ctx, node, p)
    require(ctx, versus(pop, k, "LT"), "Cannot take a larger sample than population when replace is False")
    require(ctx, compare(row, full_like(row, 0), "LT"), "negative dimensions are not allowed")
    if p is not None:
        nonzero = fold(convert(compare(p, full_like(p, 0.0), "GT"), "int64"), [_last_axis(p)], hlo.add, 0)
        require(ctx, versus(nonzero, k, "LT"), "Fewer non-zero entries in p than size")

    valid = None
    if node.op.ndims_params[0] == 0:
        out_dtype = node.outputs[1].type.dtype
        if p is not None:
            n = dim_size(p, _last_axis(p))
        elif len(static_shape(pop.type)) == 0:
            n = dim_max(pop, 0)
        else:  # a batch of populations: orders of the largest, positions past an entry's own last
            n = dim_max(fold(pop, range(len(static_shape(pop.type))), hlo.maximum, 0), 0)
            valid = compare(iota([*batch, n], axis, "int64"), broadcast_in_dim(broadcast_param(pop, batch, 0),
                                                                               [*batch, n], range(axis)), "LT")
        values = iota([*batch, n], axis, out_dtype)
    else:
        values = broadcast_param(a, batch, node.op.ndims_params[0])
        n = dim_size(values, axis)
    keys = _uniform_keys(draw_key, [*batch, n], valid) if p is None else _gumbel_keys(draw_key, p, batch)
    chosen = slice_axis(_padded(_ordered(keys, values, axis), axis, k), axis, 0, k)
    rest = list(shape_of(chosen))[axis + 1:]
    return next_key, reshape(chosen, [*batch, *core, *rest])
