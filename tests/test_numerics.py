"""The numpy behaviours that compiler backends get wrong, each pinned by name.

Every case runs the graph as written and after PyTensor's rewrites against the
Python mode (`Op.perform`, i.e. numpy) and also states the numpy answer, so a
reader sees the semantics without running anything. Where we knowingly differ
(README, "Where we knowingly differ"), the test pins our documented answer instead.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from tests.helpers import assert_same, compare_with_py

I64 = np.iinfo(np.int64)


def _check(inputs, outputs, values, numpy_says):
    """Ours == the Python mode's, and the Python mode says what numpy says."""
    got = compare_with_py(inputs, outputs, values)
    for g, want in zip(got, numpy_says):
        assert_same(g, want)


def test_integer_division_and_modulo_by_zero_give_zero():
    x, y = pt.lvector("x"), pt.lvector("y")
    u, v = pt.vector("u", dtype="uint8"), pt.vector("v", dtype="uint8")
    values = [np.array([7, -7, 0, I64.min]), np.zeros(4, "int64"), np.array([7, 0, 255], "uint8"), np.zeros(3, "uint8")]
    with np.errstate(all="ignore"):
        _check([x, y, u, v], [x // y, x % y, u // v, u % v], values,
               [np.zeros(4, "int64"), np.zeros(4, "int64"), np.zeros(3, "uint8"), np.zeros(3, "uint8")])


def test_floor_division_and_modulo_of_negatives_round_toward_minus_infinity():
    x, y = pt.lvector("x"), pt.lvector("y")
    a, b = pt.dvector("a"), pt.dvector("b")
    xs, ys = np.array([-7, 7, -7, 7, I64.min]), np.array([2, -2, -2, 2, -1])
    as_, bs = np.array([-7.5, 7.5, -0.0, 5.0]), np.array([2.0, -2.0, 3.0, np.inf])
    _check([x, y, a, b], [x // y, x % y, a // b, a % b], [xs, ys, as_, bs], [
        np.array([-4, -4, 3, 3, I64.min]),   # int64 min // -1 wraps (no trap)
        np.array([1, -1, -1, 1, 0]),          # the sign of the divisor
        np.array([-4.0, -4.0, -0.0, 0.0]),
        np.array([0.5, -0.5, 0.0, 5.0]),      # -0.0 % 3 is +0.0; 5 % inf is 5
    ])


def test_float_division_by_zero_and_int_true_division():
    a, b = pt.dvector("a"), pt.dvector("b")
    i, j = pt.ivector("i"), pt.ivector("j")
    with np.errstate(all="ignore"):
        _check([a, b, i, j], [a / b, i / j],
               [np.array([1.0, -1.0, 0.0, 1.0]), np.array([0.0, 0.0, 0.0, -0.0]),
                np.array([1, -1, 0], "int32"), np.zeros(3, "int32")],
               [np.array([np.inf, -np.inf, np.nan, -np.inf]), np.array([np.inf, -np.inf, np.nan])])


def test_unsigned_and_signed_wraparound():
    u = pt.vector("u", dtype="uint8")
    s = pt.vector("s", dtype="int8")
    one, minus_one = pt.constant(np.uint8(1)), pt.constant(np.int8(-1))
    _check([u, s], [u - one, u + one, s * minus_one, abs(s), -s],
           [np.array([0, 255], "uint8"), np.array([-128, 127], "int8")], [
               np.array([255, 254], "uint8"), np.array([1, 0], "uint8"),
               np.array([-128, -127], "int8"), np.array([-128, 127], "int8"), np.array([-128, -127], "int8"),
           ])


def test_float_to_int_casts_saturate():
    """numpy leaves NaN/inf/out-of-range casts to the C compiler (x86 gives INT_MIN, and
    wraps through int32 for small types); XLA saturates and maps NaN to 0. Documented."""
    x = pt.dvector("x")
    value = np.array([np.nan, np.inf, -np.inf, 1e20, -1e20, 300.0, -3.7, 3.7])
    f = pytensor.function([x], [pt.cast(x, t) for t in ("int8", "uint8", "int64")], mode="STABLEHLO")
    int8, uint8, int64 = f(value)
    assert_same(int8, np.array([0, 127, -128, 127, -128, 127, -3, 3], "int8"))
    assert_same(uint8, np.array([0, 255, 0, 255, 0, 255, 0, 3], "uint8"))
    assert_same(int64, np.array([0, I64.max, I64.min, I64.max, I64.min, 300, -3, 3]))


@pytest.mark.parametrize("source", ["int16", "int64", "uint32", "uint64"])
def test_int_to_int_casts_keep_the_low_bits(source):
    """The Python mode raises OverflowError for a value the target cannot hold; numpy's
    astype and the C backend keep its low bits, as XLA's conversion does. Documented."""
    x = pt.vector("x", dtype=source)
    value = np.array([np.iinfo(source).max, np.iinfo(source).min, 300, 7], source)
    targets = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
    got = pytensor.function([x], [pt.cast(x, t) for t in targets], mode="STABLEHLO")(value)
    for g, t in zip(got, targets, strict=True):
        assert_same(g, value.astype(t), label=f"{source} -> {t}")


def test_max_min_propagate_nan_and_argmax_takes_the_first_nan_or_tie():
    x, y = pt.dvector("x"), pt.dvector("y")
    xs, ys = np.array([np.nan, 1.0, 2.0, -0.0]), np.array([1.0, np.nan, 2.0, 0.0])
    _check([x, y], [pt.maximum(x, y), pt.minimum(x, y), x.max(), pt.argmax(y), pt.argmin(x[2:])], [xs, ys], [
        np.array([np.nan, np.nan, 2.0, -0.0]), np.array([np.nan, np.nan, 2.0, -0.0]),
        np.array(np.nan), np.array(1), np.array(1),  # -0.0 == 0.0: ties go to the first
    ])


def test_reductions_of_empty_arrays():
    x = pt.dmatrix("x")
    b = pt.matrix("b", dtype="bool")
    with np.errstate(all="ignore"):
        _check([x, b], [x.sum(), x.prod(), x.sum(axis=0), x.mean(), b.any(), b.all()],
               [np.zeros((0, 2)), np.zeros((0, 2), bool)],
               [np.array(0.0), np.array(1.0), np.zeros(2), np.array(np.nan), np.array(False), np.array(True)])


def test_mean_of_ints_is_float64_and_does_not_overflow():
    x = pt.vector("x", dtype="int8")
    _check([x], [x.mean(), x.sum()], [np.array([127, 127, 127], "int8")],
           [np.array(127.0), np.array(381)])  # sum of int8 accumulates in int64


def test_powers_at_the_edges():
    a, b = pt.dvector("a"), pt.dvector("b")
    i, j = pt.lvector("i"), pt.lvector("j")
    with np.errstate(all="ignore"):
        _check([a, b, i, j], [a**b, i**j],
               [np.array([0.0, 0.0, -8.0, -0.0, np.nan, 1.0]), np.array([0.0, -1.0, 1 / 3, -1.0, 0.0, np.nan]),
                np.array([0, 2, -2, 3]), np.array([0, 62, 63, 40])],
               [np.array([1.0, np.inf, np.nan, -np.inf, 1.0, 1.0]),
                np.array([1, 2**62, I64.min, 3**40 % 2**64 - 2**64 if 3**40 % 2**64 >= 2**63 else 3**40 % 2**64])])
    f = pytensor.function([i, j], i**j, mode="STABLEHLO")
    with pytest.raises(ValueError, match="negative integer powers"):
        f(np.array([2]), np.array([-1]))


def test_bool_arithmetic_stays_logical_and_sums_count():
    p, q = pt.vector("p", dtype="bool"), pt.vector("q", dtype="bool")
    ps, qs = np.array([True, True, False]), np.array([True, False, False])
    _check([p, q], [p + q, p * q, p.sum(), p.mean(), pt.eq(p, q)], [ps, qs], [
        np.array([True, True, False]), np.array([True, False, False]), np.array(2),
        np.array(2 / 3), np.array([True, False, True]),
    ])


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_inverse_functions_on_branch_cuts_signed_zeros_and_infinities(dtype):
    """C99 Annex G, as numpy: the sign of a zero part picks the side of a branch cut
    (XLA's own complex asin/acos/acosh/atan ignore it), infinities and NaN parts give
    C99's special values, and atanh/atan stay finite next to their poles. Real and
    imaginary parts are compared apart: a complex with one NaN part counts as NaN
    whole in numpy's comparisons, which hid atanh(0.5 + nan j) = nan + pi/2 j."""
    parts = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 1e-300, 1e300, -np.inf, np.inf, np.nan]
    value = np.array([complex(a, b) for a in parts for b in parts], dtype=dtype)
    z = pt.vector("z", dtype=dtype)
    functions = {"arcsin": pt.arcsin, "arccos": pt.arccos, "arctan": pt.arctan,
                 "arcsinh": pt.arcsinh, "arccosh": pt.arccosh, "arctanh": pt.arctanh,
                 "sqrt": pt.sqrt, "log": pt.log, "log2": pt.log2, "log10": pt.log10}
    with np.errstate(all="ignore"):
        got = compare_with_py([z], [f(z) for f in functions.values()], [value])
        for name, g in zip(functions, got):
            want = getattr(np, name)(value)
            for part in ("real", "imag"):
                g_part, w_part = getattr(g, part), getattr(want, part)
                np.testing.assert_allclose(g_part, w_part, rtol=1e-6 if dtype == "complex64" else 1e-12,
                                           err_msg=f"{name}: {part} at {value}")
                same_sign = (np.signbit(g_part) == np.signbit(w_part)) | np.isnan(w_part)
                assert same_sign.all(), f"{name}: sign of {part} at {value[~same_sign][:4]}"
    got = pytensor.function([z], [pt.sqrt(z), pt.log(z)], mode="STABLEHLO")(np.array([-1 + 0j, complex(-1, -0.0)], dtype))
    assert_same(got[0], np.array([1j, -1j], dtype))
    assert_same(got[1], np.array([np.pi * 1j, -np.pi * 1j], dtype))


def test_clip_with_nan_and_crossed_bounds():
    """PyTensor's Clip, not np.clip: x < lo gives lo, else x > hi gives hi (np.clip
    gives hi whenever lo > hi)."""
    x, lo, hi = pt.dvector("x"), pt.dscalar("lo"), pt.dscalar("hi")
    _check([x, lo, hi], [pt.clip(x, lo, hi)], [np.array([np.nan, -5.0, 5.0, 0.5]), np.array(1.0), np.array(0.0)],
           [np.array([np.nan, 1.0, 0.0, 1.0])])


def test_float16_overflows_to_inf_and_rounds_half_to_even():
    h = pt.vector("h", dtype="float16")
    d = pt.dvector("d")
    _check([h, d], [h * 2, pt.round(d)], [np.array([65504.0, 1.0], "float16"), np.array([0.5, 1.5, 2.5, -0.5])],
           [np.array([np.inf, 2.0], "float16"), np.array([0.0, 2.0, 2.0, -0.0])])


_MATERN_GRADIENT = """
import numpy as np, pymc as pm, warnings
warnings.filterwarnings("ignore")
import lowering
rng = np.random.default_rng(0)
X = rng.uniform(0, 3, size=(30, 1)); y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=30)
with pm.Model() as m:
    gp = pm.gp.Marginal(cov_func=pm.gp.cov.Matern52(1, ls=pm.Gamma("ls", 2, 2)))
    gp.marginal_likelihood("y", X=X, y=y, sigma=0.1)
for mode in ("STABLEHLO", "FAST_COMPILE"):
    f = m.logp_dlogp_function(ravel_inputs=True, mode=mode); f.set_extra_values({})
    print(repr(float(f(np.array([np.log(0.55)]))[1][0])))
"""


def test_the_readme_remedy_for_fma_contraction_gives_numpys_gradient():
    """README: XLA's FMA contraction can give a recomputed value two roundings, and a
    clip's gradient mask then disagrees with itself; XLA_FLAGS=--xla_cpu_max_isa=AVX
    (process-wide, before JAX's first compile) restores numpy's value."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, XLA_FLAGS="--xla_cpu_max_isa=AVX", JAX_PLATFORMS="cpu")
    run = subprocess.run([sys.executable, "-c", _MATERN_GRADIENT], env=env, capture_output=True, text=True,
                         timeout=600, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert run.returncode == 0, run.stderr[-2000:]
    ours, numpy_value = map(float, run.stdout.split())
    assert abs(numpy_value - 12.749) < 1e-3
    assert ours == pytest.approx(numpy_value, rel=1e-9)


def _gp_gradient(mode):
    """d logp / d log(ls) of the README's Matern52 GP at ls = 0.55, under `mode`."""
    import warnings

    import pymc as pm

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 3, size=(30, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=30)
    with pm.Model() as model:
        gp = pm.gp.Marginal(cov_func=pm.gp.cov.Matern52(1, ls=pm.Gamma("ls", 2, 2)))
        gp.marginal_likelihood("y", X=X, y=y, sigma=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = model.logp_dlogp_function(ravel_inputs=True, mode=mode)
    f.set_extra_values({})
    return float(f(np.array([np.log(0.55)]))[1][0])


def _scaled_expquad_gradient(mode):
    """The gradient of benchmarks/bench_models.py's GP (eta**2 * ExpQuad(ell) plus noise),
    on 30 points, at (log ell, log eta, log sigma) = (0.063, -0.066, 0.320)."""
    import warnings

    import pymc as pm

    rng = np.random.default_rng(0)
    X = np.sort(rng.uniform(0, 10, size=30))[:, None]
    with pm.Model() as model:
        ell, eta = pm.Gamma("ell", 2, 1), pm.HalfNormal("eta", 1)
        gp = pm.gp.Marginal(cov_func=eta**2 * pm.gp.cov.ExpQuad(1, ell))
        gp.marginal_likelihood("y", X=X, y=np.sin(X[:, 0]), sigma=pm.HalfNormal("sigma", 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = model.logp_dlogp_function(ravel_inputs=True, mode=mode)
    f.set_extra_values({})
    return f(np.array([0.063, -0.066, 0.320]))[1]


def test_the_no_fma_mode_gives_numpys_gp_gradient_in_process():
    """README: STABLEHLO_NO_FMA compiles with no multiply-add contracted, in a process
    whose XLA would contract them, so the clip mask agrees with itself again."""
    numpy_value = _gp_gradient("FAST_COMPILE")
    assert abs(numpy_value - 12.749) < 1e-3
    assert _gp_gradient("STABLEHLO_NO_FMA") == pytest.approx(numpy_value, rel=1e-9)


@pytest.mark.parametrize("mode", ["STABLEHLO", "STABLEHLO_NO_FMA"])
def test_a_compared_sum_is_one_number_so_gp_gradients_are_numpys(mode):
    """A GP's squared distances, which its clip and the clip's gradient mask compare with
    0, are computed once (`passes.compute_compared_once`). XLA recomputed them in each
    kernel that read them, with FMAs in some, and numpy's diagonal of zeros came out as
    +-1e-15 in some kernels: without the pass (AMD EPYC, AVX-512) d logp / d log(ls) was
    -4,025 against 12.749 (Matern52, STABLEHLO) and d logp / d log(ell) -113.2 against
    1.915 (the benchmark's GP) in both modes, XLA's algebraic simplifier squaring
    x * exp(-l) as x**2 * exp(-2 l) where no FMA is left."""
    assert _gp_gradient(mode) == pytest.approx(_gp_gradient("FAST_COMPILE"), rel=1e-9)
    np.testing.assert_allclose(_scaled_expquad_gradient(mode), _scaled_expquad_gradient("FAST_COMPILE"), rtol=1e-9)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_no_fma_mode_rounds_every_product_before_the_add(dtype):
    """a * b + c with c = -fl(a * b) is exactly 0 in numpy; one FMA gives the product's
    rounding error instead. Chained, as XLA fuses them: (a * b + c) * a + c * b."""
    a, b, c = (pt.vector(n, dtype=dtype) for n in "abc")
    x = np.arange(1, 65, dtype=dtype) * np.asarray(0.1, dtype)
    y = np.arange(1, 65, dtype=dtype) * np.asarray(0.3, dtype)
    z = -(x * y)
    outputs = [a * b + c, (a * b + c) * a + c * b]
    f = pytensor.function([a, b, c], outputs, mode="STABLEHLO_NO_FMA")
    for got, want in zip(f(x, y, z), [x * y + z, (x * y + z) * x + z * y]):
        assert_same(got, want)
    assert not np.any(f(x, y, z)[0])


def test_no_fma_keeps_sums_of_products_as_reduces(monkeypatch):
    """A sum of outer products becomes a dot, which contracts multiply-adds, only in
    executables that may: under STABLEHLO_NO_FMA each product is rounded, and products
    that cancel exactly in numpy cancel here (with an FMA, x * -y + fl(x * y) is the
    product's rounding error)."""
    from lowering import passes

    taken = []
    real = passes.dot_general
    monkeypatch.setattr(passes, "dot_general", lambda *a, **k: taken.append(1) or real(*a, **k))
    a, b = pt.dmatrix("a"), pt.dmatrix("b")
    x = np.repeat(np.arange(1, 21) * 0.1, 2)[:, None] * np.ones((1, 3))
    y = np.tile([0.3, -0.3], 20)[:, None] * np.arange(1, 5)
    f = pytensor.function([a, b], (a[:, :, None] * b[:, None, :]).sum(0), mode="STABLEHLO_NO_FMA")
    got = f(x, y)
    assert_same(got, (x[:, :, None] * y[:, None, :]).sum(0))
    assert not np.any(got) and not taken
    pytensor.function([a, b], (a[:, :, None] * b[:, None, :]).sum(0), mode="STABLEHLO")(x, y)
    assert taken


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_no_fma_rounds_every_size_as_numpy(dtype):
    """XLA compiles small and large vectors with different emitters (its MLIR fusion
    emitters contract whatever LLVM's level): none of them may contract."""
    from lowering import lower
    from pytensor.graph.fg import FunctionGraph

    a, b, c = (pt.vector(name, dtype=dtype) for name in "abc")
    compiled = lower(FunctionGraph([a, b, c], [a * b + c])).compile(fp_contraction=False)
    for n in (1, 2, 3, 5, 8, 17, 1000):
        x, y = (np.arange(1, n + 1) * 0.1).astype(dtype), (np.arange(1, n + 1) * 0.3).astype(dtype)
        assert not np.any(compiled(x, y, -(x * y))[0]), n


def test_the_no_fma_option_is_refused_where_it_has_no_implementation():
    from lowering import lower
    from pytensor.graph.fg import FunctionGraph

    x = pt.dvector("x")
    lowered = lower(FunctionGraph([x], [x * 2 + 1]))
    with pytest.raises(NotImplementedError, match="fp_contraction=False.*CPU only.*'cuda'"):
        lowered.compile("cuda", fp_contraction=False)


def test_no_fma_keeps_the_options_this_xla_takes_and_refuses_where_none_stop_contraction(monkeypatch):
    # jaxlib 0.11.2 refuses every compile that names xla_cpu_use_fusion_emitters (seen on
    # the GPU machine's jax): an option XLA does not know is left out, and where what is
    # left does not stop contraction, the mode says so instead of returning FMA numbers.
    from lowering import compile as comp

    if not comp._contracts("cpu"):
        pytest.skip("this host's XLA contracts nothing: no options are needed")
    known = comp._NO_CONTRACTION
    try:
        comp.no_contraction_overrides.cache_clear()
        monkeypatch.setattr(comp, "_NO_CONTRACTION", known + (("xla_no_such_option", "1"),))
        assert comp.no_contraction_overrides("cpu") == known
        comp.no_contraction_overrides.cache_clear()
        monkeypatch.setattr(comp, "_NO_CONTRACTION", (("xla_no_such_option", "1"),))
        with pytest.raises(NotImplementedError, match="contracts multiply-adds.*no option it takes"):
            comp.no_contraction_overrides("cpu")
    finally:
        comp.no_contraction_overrides.cache_clear()


def test_contracted_and_uncontracted_executables_are_cached_apart(tmp_path, monkeypatch):
    """The same module compiled both ways is two executables, in memory and on disk."""
    from lowering import compile as comp
    from lowering import lower
    from pytensor.graph.fg import FunctionGraph

    monkeypatch.setenv(comp.DISK_CACHE_ENV, str(tmp_path))
    comp.EXECUTABLES.clear()
    a, b, c = pt.dvectors("a", "b", "c")
    lowered = lower(FunctionGraph([a, b, c], [a * b + c]))
    x, y = np.arange(1, 9) * 0.1, np.arange(1, 9) * 0.3
    exact = lowered.compile(fp_contraction=False)(x, y, -(x * y))[0]
    lowered.compile()(x, y, -(x * y))
    assert not np.any(exact)
    expected = 2 if comp.no_contraction_overrides("cpu") else 1
    assert len(list(tmp_path.glob("cpu-*.xla"))) == expected
