"""Continuous RandomVariables (dialect_rules/random_continuous.py): the distributions
against scipy.stats, shapes and dtypes against the Python mode, edge parameters and
parameter errors against numpy/scipy themselves (the Op's own `rng_fn`)."""

from __future__ import annotations

import re

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.special as sc
import scipy.stats as st
from jax.extend.mlir import ir
from jax.extend.mlir.dialects import func
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.tensor.random import basic as rv

from dialect_rules.random import unit
from lowering._jax_internal import make_ir_context
from lowering.builders import convert, full_like
from lowering.compile import compile_module
from lowering.types import tensor_type

from tests.helpers import N_DRAWS, PY_MODE, assert_distribution, assert_family, device_put, draw


class _GenGamma:
    """scipy's gengamma(a, c > 0, scale), its cdf gammainc(a, (x / scale)^c) taken to the
    leading term (x / scale)^(a c) / Gamma(a + 1) where the power underflows (scipy's
    cdf is 0 there, and half the mass of a = 0.001 lies there)."""

    def __init__(self, a, c, scale):
        self.a, self.c, self.scale = a, c, scale
        self.dist = st.gengamma(a, c, scale=scale)

    def stats(self, moments):
        return self.dist.stats(moments=moments)

    def cdf(self, x):
        if self.c < 0:
            return self.dist.cdf(x)
        with np.errstate(divide="ignore"):
            log_power = self.c * np.log(x / self.scale)
        tail = np.exp(self.a * log_power - sc.gammaln(self.a + 1))
        return np.where(log_power < -700, tail, self.dist.cdf(x))


# name: (the public builder, the scipy distribution of the same parameters,
#        parameter sets drawn in float64 (one column each), those drawn in float32).
# The sets cover each sampler's branches: shapes below and above 1 for the gamma-based
# ones (the log-space boost), a, b <= 1 for beta, both roots of Wald, the tails.
FAMILIES = {
    "halfnormal": (rv.halfnormal, lambda loc, s: st.halfnorm(loc, s), [(0.0, 1.0), (-1.0, 3.0)], [(2.0, 0.5)]),
    "lognormal": (rv.lognormal, lambda m, s: st.lognorm(s, scale=np.exp(m)), [(0.0, 1.0), (1.5, 0.25)], [(0.5, 0.5)]),
    "exponential": (rv.exponential, lambda s: st.expon(scale=s), [(1.0,), (0.2,)], [(3.0,)]),
    "cauchy": (rv.cauchy, lambda loc, s: st.cauchy(loc, s), [(0.0, 1.0), (2.0, 0.5)], [(-1.0, 2.0)]),
    "halfcauchy": (rv.halfcauchy, lambda loc, s: st.halfcauchy(loc, s), [(0.0, 1.0), (2.0, 0.5)], [(1.0, 2.0)]),
    "laplace": (rv.laplace, lambda loc, s: st.laplace(loc, s), [(0.0, 1.0), (2.0, 0.5)], [(-1.0, 2.0)]),
    "logistic": (rv.logistic, lambda loc, s: st.logistic(loc, s), [(0.0, 1.0), (2.0, 0.5)], [(-1.0, 2.0)]),
    "gumbel": (rv.gumbel, lambda loc, s: st.gumbel_r(loc, s), [(0.0, 1.0), (2.0, 0.5)], [(-1.0, 2.0)]),
    "weibull": (rv.weibull, lambda a: st.weibull_min(a), [(0.5,), (1.0,), (4.0,)], [(1.7,)]),
    "pareto": (rv.pareto, lambda b, s: st.pareto(b, scale=s), [(0.5, 1.0), (3.0, 2.0)], [(5.0, 1.0)]),
    "truncexpon": (
        rv.truncexpon, lambda b, loc, s: st.truncexpon(b, loc, s),
        [(0.01, 0.0, 1.0), (2.0, 1.0, 3.0), (40.0, 0.0, 1.0)], [(2.0, 1.0, 3.0)],
    ),
    "triangular": (
        rv.triangular, lambda lo, m, hi: st.triang((m - lo) / (hi - lo), loc=lo, scale=hi - lo),
        [(0.0, 0.0, 1.0), (-1.0, 0.5, 2.0), (0.0, 1.0, 1.0)], [(-1.0, 0.5, 2.0)],
    ),
    "wald": (
        rv.wald, lambda m, lam: st.invgauss(m / lam, scale=lam),
        [(1.0, 1.0), (3.0, 0.2), (0.5, 50.0), (1e3, 1e-2)], [(3.0, 0.2)],
    ),
    "invgamma": (rv.invgamma, lambda a, s: st.invgamma(a, scale=s), [(0.3, 1.0), (3.0, 2.0), (40.0, 0.5)], [(5.0, 1.0)]),
    "beta": (
        rv.beta, lambda a, b: st.beta(a, b),
        [(0.3, 0.5), (1.0, 1.0), (0.7, 3.0), (2.5, 5.0), (200.0, 0.8)], [(0.3, 0.5), (2.5, 5.0)],
    ),
    "t": (rv.t, lambda df, loc, s: st.t(df, loc, s), [(0.5, 0.0, 1.0), (3.0, 1.0, 2.0), (30.0, 0.0, 1.0)], [(4.5, 1.0, 2.0)]),
    # a = alpha / p = 0.001 in the second set: Gamma(a) underflows to 0 for half the
    # draws, its 20th root is an ordinary number; the third has alpha, p < 0.
    "gengamma": (
        rv.gengamma, lambda alpha, p, lam: _GenGamma(alpha / p, p, lam),
        [(2.0, 1.5, 3.0), (0.02, 20.0, 1.0), (-3.0, -2.0, 2.0), (0.5, 0.5, 1.0)], [(2.0, 1.5, 3.0)],
    ),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", FAMILIES)
def test_distribution(name, dtype):
    builder, scipy_dist, sets64, sets32 = FAMILIES[name]
    assert_family(builder, scipy_dist, sets64 if dtype == "float64" else sets32, dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_vonmises(dtype):
    # numpy's regimes: uniform below kappa = 1e-8, Best-Fisher rejection, wrapped normal
    # above 1e6. scipy's vonmises is not wrapped (support loc +- pi) and integrates its
    # moments numerically (seconds): the check is a KS test of the angle to mu and the
    # mean of cos(x - mu), I1(kappa) / I0(kappa).
    mu, kappa = pt.vector("mu", dtype=dtype), pt.vector("kappa", dtype=dtype)
    kappas = np.array([1e-9, 1e-6, 0.5, 4.0, 1e3, 5e5, 4e6], dtype=dtype)
    mus = np.array([1.0, -2.0, 0.0, 3.0, -1.0, 2.5, 1.0], dtype=dtype)
    x = draw(
        lambda r, size: pt.random.vonmises(mu, kappa, size=size, rng=r, dtype=dtype),
        n=(N_DRAWS, len(kappas)), inputs=[mu, kappa], values=[mus, kappas],
    )
    assert x.dtype == dtype and np.all(np.abs(x) <= np.pi)
    for column, m, k in zip(x.T, mus, kappas):
        if k < 1e-8:
            assert_distribution(column, st.uniform(-np.pi, 2 * np.pi))
            continue
        angle = np.angle(np.exp(1j * (column.astype(np.float64) - m)))
        assert st.kstest(angle, st.vonmises(float(k)).cdf).pvalue > 1e-4, k
        cos = np.cos(angle)
        expected = sc.i1e(float(k)) / sc.i0e(float(k))
        assert abs(cos.mean() - expected) <= 6 * cos.std() / np.sqrt(cos.size), k


def test_beta_with_tiny_parameters_has_the_mass_at_0_and_1_that_underflows():
    # Beta(1e-3, 2e-3): most of the mass within 1e-308 of 0 or rounds to 1; numpy's
    # Johnk method gives exact 0s and 1s there, as the log-space gammas do, never 0/0.
    x = draw(lambda r, size: pt.random.beta(1e-3, 2e-3, size=size, rng=r))
    assert not np.isnan(x).any()
    dist = st.beta(1e-3, 2e-3)
    for at_zero, expected in ((x == 0).mean(), dist.cdf(1e-308)), ((x == 1).mean(), dist.sf(1 - 2**-53)):
        assert abs(at_zero - expected) < 6 * np.sqrt(expected * (1 - expected) / x.size)
    inner = (x > 0) & (x < 1)
    assert abs(inner.mean() - (dist.sf(1e-308) - dist.sf(1 - 2**-53))) < 0.01


def test_student_t_with_a_tiny_df_against_exact_log_space_draws():
    # df = 2e-3: log|T| = log|N| + (log(df / 2) - log G) / 2 is about 500 E (E standard
    # exponential), inf for a quarter of the draws in float64; a plain G ~ Gamma(1e-3)
    # underflows to 0 (T = inf) for 70%. scipy's t cdf is 1 at 1.8e308 for this df, so
    # the reference is numpy drawing the same identity G = G' U^(1/a) in logs.
    df, a = 2e-3, 1e-3
    x = draw(lambda r, size: pt.random.t(df, 0.0, 1.0, size=size, rng=r))
    gen = np.random.default_rng(1)
    log_g = np.log(gen.gamma(a + 1, size=N_DRAWS)) + np.log(gen.uniform(size=N_DRAWS)) / a
    reference = np.log(np.abs(gen.standard_normal(N_DRAWS))) + 0.5 * (np.log(a) - log_g)
    overflow = np.log(np.finfo(np.float64).max)
    with np.errstate(divide="ignore"):
        ours = np.log(np.abs(x))
    assert st.ks_2samp(np.minimum(ours, overflow), np.minimum(reference, overflow)).pvalue > 1e-4
    assert abs(np.isinf(x).mean() - (reference > overflow).mean()) < 0.01


def test_public_helpers_built_on_other_ops():
    rng = pytensor.shared(np.random.default_rng(0))
    df = pt.dvector("df")
    chi2, normal = pytensor.function([df], [
        pt.random.chisquare(df, size=(N_DRAWS, 2), rng=rng),
        pt.random.standard_normal(size=N_DRAWS, rng=rng),
    ], mode="STABLEHLO")(np.array([0.5, 3.0]))
    for column, k in zip(chi2.T, (0.5, 3.0)):
        assert_distribution(column, st.chi2(k))
    assert_distribution(normal, st.norm())


def _open_unit(words, dtype):
    """`unit(..., open_zero=True)` compiled alone and run on the given 64-bit words (entering as two
    ui32 halves: jax.device_put would truncate ui64)."""
    n = len(words)
    halves = np.asarray(words, dtype=np.uint64).view(np.uint32).reshape(n, 2)  # little-endian: lo, hi
    with make_ir_context(), ir.Location.unknown():
        module = ir.Module.create()
        u32 = tensor_type((n,), "uint32")
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir.FunctionType.get([u32, u32], [tensor_type((n,), dtype)]))
            fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
            with ir.InsertionPoint(fn.add_entry_block()):
                lo, hi = (convert(a, "uint64") for a in fn.arguments)
                word = hlo.or_(hlo.shift_left(hi, full_like(hi, 32)), lo)
                func.return_([unit(word, dtype, open_zero=True)])
        exe = compile_module(module, "cpu")
    result = exe.execute_sharded([device_put(np.ascontiguousarray(halves[:, i])) for i in (0, 1)])
    return np.asarray(result.disassemble_into_single_device_arrays()[0][0])


@pytest.mark.parametrize("dtype, m", [("float32", 24), ("float64", 53)])
def test_open_uniform_is_strictly_inside_the_unit_interval_and_symmetric(dtype, m):
    # The core's half-step on m bits rounds the largest word to exactly 1 (then its
    # normal is erfinv(1) = inf, once in 2^24 float32 draws).
    top = 2**64 - 1
    u = _open_unit([0, top, 2**63, 2**63 - 1, 2 ** (64 - m + 1), top - 2 ** (64 - m + 1)], dtype)
    assert u.dtype == dtype
    assert u[0] == 2.0**-m and u[1] == 1 - 2.0**-m
    np.testing.assert_array_equal(u[[0, 3, 4]], 1 - u[[1, 2, 5]])
    assert np.all(np.diff(np.sort(u)) > 0)


# --- shapes, dtypes, edge parameters and errors, against the Op's own rng_fn -----------

OPS = {name: spec[0] for name, spec in FAMILIES.items()} | {"vonmises": rv.vonmises}


def test_float16_draws():
    """float16 draws are float32 work converted by the core; the samplers with a
    rejection loop (gamma-based, von Mises) run the float32 code tested above, so one
    graph holds the others (each loop costs a second of compile)."""
    rng = pytensor.shared(np.random.default_rng(0))
    names = [name for name in FAMILIES if name not in ("invgamma", "beta", "t", "gengamma")]
    inputs = {name: [pt.scalar(dtype="float16") for _ in FAMILIES[name][3][0]] for name in names}
    outputs = [OPS[name](*inputs[name], size=(1000,), rng=rng, dtype="float16") for name in names]
    flat_inputs = [x for name in names for x in inputs[name]]
    values = [np.float16(v) for name in names for v in FAMILIES[name][3][0]]
    got = pytensor.function(flat_inputs, outputs, mode="STABLEHLO")(*values)
    expected = pytensor.function(flat_inputs, outputs, mode=PY_MODE)(*values)
    for name, g, e in zip(names, got, expected):
        assert (g.shape, g.dtype) == (e.shape, e.dtype), name
        assert not np.isnan(g).any() and len(np.unique(g)) > 100, name


# Parameter rows whose numpy/scipy draws are one number whatever the state (0, inf,
# NaN, loc where scale is 0, a degenerate limit); all rows of an Op go in one call.
EDGES = {
    "halfnormal": [(np.nan, 1), (np.inf, 1), (-np.inf, 1), (1e300, 1), (2, 0), (0, np.inf)],
    "lognormal": [(np.nan, 1), (np.inf, 1), (-np.inf, 1), (1e300, 1), (0, 0), (1, np.nan), (0, 1e-300)],
    "exponential": [(0,), (np.nan,), (np.inf,)],
    "cauchy": [(np.nan, 1), (np.inf, 1), (3, 0)],
    "halfcauchy": [(np.nan, 1), (-np.inf, 1), (3, 0), (0, np.inf)],
    "laplace": [(np.nan, 1), (np.inf, 1), (3, 0), (0, np.nan)],
    "logistic": [(np.nan, 1), (-np.inf, 1), (3, 0), (0, np.nan)],
    "gumbel": [(np.nan, 1), (np.inf, 1), (3, 0)],
    "weibull": [(0,), (np.inf,), (np.nan,), (1e300,)],
    "pareto": [(np.inf, 1), (1e-300, 1), (1e300, 2), (2, 0), (2, np.inf)],
    "truncexpon": [(2, np.nan, 1), (2, np.inf, 1), (2, 3, 0), (2, 0, np.inf)],
    "triangular": [(np.nan, 0.5, 1), (0, np.nan, 1), (0, 0.5, np.nan), (-np.inf, 0.5, 1), (0, 0.5, np.inf)],
    "wald": [(np.nan, 1), (1, np.nan), (np.inf, 1), (2, np.inf)],
    "invgamma": [(0, 1), (np.nan, 1), (np.inf, 1), (1e-300, 1), (1e300, 1), (2, 0), (2, np.inf), (2, np.nan)],
    "beta": [(np.nan, 1), (1, np.nan), (1e-300, 3), (1e300, 3), (2, np.inf), (3, 1e-300)],
    "t": [(np.inf, 0, 1), (3, np.nan, 1), (3, np.inf, 1), (3, 2, 0)],
    "gengamma": [(np.inf, 1.5, 1), (1e-300, 1.5, 1), (1e300, 1.5, 1), (2, 1e-300, 1), (2, 1.5, 0), (2, 1.5, np.inf)],
    "vonmises": [(np.nan, 1), (np.inf, 1), (1, np.nan), (0.5, np.inf), (4.0, np.inf), (1e300, 1)],
}

# Rows numpy/scipy refuse (repeated in every row of one call).
ERRORS = {
    "halfnormal": [(0, -1), (0, np.nan)],
    "lognormal": [(0, -1), (0, -0.0)],
    "exponential": [(-1,), (-0.0,)],
    "cauchy": [(0, -1), (0, np.nan)],
    "halfcauchy": [(0, -np.inf)],
    "laplace": [(0, -1)],
    "logistic": [(0, -1)],
    "gumbel": [(0, -1), (0, np.nan)],
    "weibull": [(-1,)],
    "pareto": [(0, 1), (np.nan, 1), (1, -1)],
    "truncexpon": [(0, 0, 1), (np.nan, 0, 1), (1, 0, -1)],
    "triangular": [(1, 0.5, 2), (0, 2, 1), (1, 1, 1)],
    "wald": [(0, 1), (1, -1)],
    "invgamma": [(-1, 1), (1, -1), (1, -np.inf)],
    "beta": [(0, 1), (1, -1)],
    "t": [(0, 0, 1), (np.nan, 0, 1), (1, 0, -1)],
    "gengamma": [(-1, 1, 1), (1, 0, 1), (1, np.inf, 1), (1, 1, np.nan)],
    "vonmises": [(0, -1), (0, -0.0)],
}


def _numpy(op, rows, seed):
    columns = [np.array(c, dtype=np.float64) for c in zip(*rows)]
    return op.rng_fn(np.random.default_rng(seed), *columns, None)


@pytest.mark.parametrize("name", OPS)
def test_shapes_edge_parameters_and_errors_as_numpy(name):
    """Parameters of unknown shape, one row per edge case, the first as a column against
    the others' vectors, and a symbolic size: the Python mode's shape and dtype; on the
    diagonal (the rows as written) numpy's draws, one number per row whatever the state;
    a bad row in every row: numpy's message."""
    op = OPS[name]
    params = [pt.dvector(f"p{i}") for i in range(len(EDGES[name][0]))]
    n = pt.iscalar("n")
    rows = EDGES[name]
    out = op(params[0][:, None], *params[1:], size=(n, len(rows), len(rows)))
    f = pytensor.function([*params, n], out, mode="STABLEHLO")
    values = [*(np.array(c, dtype=np.float64) for c in zip(*rows)), 2]
    got = f(*values)
    reference = pytensor.function([*params, n], out, mode=PY_MODE)(*values)
    assert (got.shape, got.dtype) == (reference.shape, reference.dtype)
    expected = _numpy(op, rows, 0)
    np.testing.assert_array_equal(expected, _numpy(op, rows, 1))  # one number per row
    for draws in got:
        np.testing.assert_allclose(np.diagonal(draws), expected, rtol=1e-12, equal_nan=True)
    for bad in ERRORS[name]:
        bad_rows = [bad] * len(rows)
        with pytest.raises(ValueError) as numpy_error:
            _numpy(op, bad_rows, 0)
        with pytest.raises(ValueError, match="^" + re.escape(str(numpy_error.value))):
            f(*(np.array(c, dtype=np.float64) for c in zip(*bad_rows)), 2)
