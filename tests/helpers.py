"""Differential testing: run a graph with STABLEHLO and with PyTensor's Python mode."""

from __future__ import annotations

import os

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.compile.mode import Mode
from pytensor.scalar import ScalarType

import lowering  # noqa: F401  (registers the STABLEHLO mode)
from lowering.linker import StableHLOLinker

PY_MODE = Mode(linker="py", optimizer=None)
# The platform the differential tests run on: the CPU, or with
# STABLEHLO_TEST_PLATFORM=cuda an NVIDIA GPU (test files that read MODE).
PLATFORM = os.environ.get("STABLEHLO_TEST_PLATFORM", "cpu")
MODE = {"cpu": "STABLEHLO", "cuda": "STABLEHLO_CUDA"}[PLATFORM]
# The graph as written, only the rewrites the linker requires (`minimum_compile`, and
# ScanSaveMem): tests each rule on the Op itself.
RAW_MODE = Mode(linker=StableHLOLinker(platform=PLATFORM), optimizer=None)

# Default tolerances per dtype, for results of approximated functions.
TOLERANCES = {
    "float16": dict(rtol=2e-3, atol=1e-3),
    "float32": dict(rtol=1e-5, atol=1e-6),
    "float64": dict(rtol=1e-10, atol=1e-12),
    "complex64": dict(rtol=1e-5, atol=1e-6),
    "complex128": dict(rtol=1e-10, atol=1e-12),
}


def assert_same(got, expected, *, rtol=None, atol=None, label="output"):
    """Same dtype, same shape, same values (NaN where NaN, exact for ints and bools).

    A complex value is close as a whole, and each of its parts is NaN or infinite
    (with the sign) exactly where the expected one's is: numpy counts a complex with
    one NaN part as NaN whole, so nan + 1j would pass for inf + nan j.
    """
    got = np.asarray(got)
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype, f"{label}: dtype {got.dtype}, expected {expected.dtype}"
    assert got.shape == expected.shape, f"{label}: shape {got.shape}, expected {expected.shape}"
    if expected.dtype.kind in "fc":
        tol = dict(TOLERANCES[expected.dtype.name])
        if rtol is not None:
            tol["rtol"] = rtol
        if atol is not None:
            tol["atol"] = atol
        np.testing.assert_allclose(got, expected, equal_nan=True, err_msg=label, **tol)
        if expected.dtype.kind == "c":
            for part in ("real", "imag"):
                g, e = getattr(got, part), getattr(expected, part)
                differ = np.zeros(e.shape, bool)
                for special in (np.isnan, np.isposinf, np.isneginf):
                    differ |= special(g) != special(e)
                assert not differ.any(), (
                    f"{label}: {part} part {g[differ][:4]}, expected {e[differ][:4]} (where {expected[differ][:4]})")
    else:
        np.testing.assert_array_equal(got, expected, err_msg=label)


def compare_with_py(inputs, outputs, test_values, *, rtol=None, atol=None, modes=(MODE, RAW_MODE)):
    """Compile `outputs` with STABLEHLO (rewritten and raw graph, on `PLATFORM`) and the
    Python mode; compare.

    Checks too that no test value was mutated. Returns the STABLEHLO results.
    """
    return compare_each_with_py(inputs, outputs, [test_values], rtol=rtol, atol=atol, modes=modes)[0]


def compare_each_with_py(inputs, outputs, value_sets, *, rtol=None, atol=None, modes=(MODE, RAW_MODE)):
    """`compare_with_py` for each list of test values in `value_sets`, the functions
    built once (a graph whose shapes are unknown, called with several). Returns the
    STABLEHLO results of each."""
    single = not isinstance(outputs, (list, tuple))
    outputs = [outputs] if single else list(outputs)
    reference = pytensor.function(inputs, outputs, mode=PY_MODE)
    functions = [(mode, pytensor.function(inputs, outputs, mode=mode)) for mode in modes]
    all_results = []
    for test_values in value_sets:
        before = [np.array(v, copy=True) for v in test_values]
        expected = reference(*test_values)
        results = None
        for mode, fn in functions:
            got = fn(*test_values)
            for i, (g, e, out) in enumerate(zip(got, expected, outputs, strict=True)):
                # (not type(e): some performs give a numpy scalar for a 0-d tensor)
                kind = np.generic if isinstance(out.type, ScalarType) else np.ndarray
                assert isinstance(g, kind), f"output {i} ({mode}): a {type(g).__name__}, expected {kind.__name__}"
                assert_same(g, e, rtol=rtol, atol=atol, label=f"output {i} ({mode})")
            results = results or got
        for i, (b, v) in enumerate(zip(before, test_values)):
            np.testing.assert_array_equal(np.asarray(v), b, err_msg=f"input {i} was mutated")
        all_results.append(results[0] if single else results)
    return all_results


def record_emitter_choices(monkeypatch) -> list[bool]:
    """Whether each compile from here on (in order) takes XLA's elemental emitter:
    `compile_bytecode`'s `elemental`, as `compile_module` chose it."""
    import lowering.compile as comp

    choices = []
    real = comp.compile_bytecode

    def recording(*args, elemental=False, **kwargs):
        choices.append(elemental)
        return real(*args, elemental=elemental, **kwargs)

    monkeypatch.setattr(comp, "compile_bytecode", recording)
    return choices


def record_compiled_hlo(monkeypatch) -> list[str]:
    """The HLO text XLA compiled, for each compile from here on (in order)."""
    import lowering.compile as comp

    texts = []
    real = comp.compile_bytecode

    def recording(*args, **kwargs):
        exe = real(*args, **kwargs)
        texts.append(exe.hlo_modules()[0].to_string())
        return exe

    monkeypatch.setattr(comp, "compile_bytecode", recording)
    return texts


# --- random variables ----------------------------------------------------------

N_DRAWS = 100_000


def draw(make_rv, n=N_DRAWS, seed=0, mode="STABLEHLO", inputs=(), values=()):
    """`n` draws of `make_rv(rng, size)` from a Generator seeded with `seed`."""
    rng = pytensor.shared(np.random.default_rng(seed))
    out = make_rv(rng, (n,) if isinstance(n, int) else n)
    return pytensor.function(list(inputs), out, mode=mode)(*values)


def assert_family(builder, scipy_dist, sets, dtype):
    """`builder(*params, size=, rng=, dtype=)` draws each parameter set's distribution
    (`scipy_dist(*params)`): N_DRAWS draws per set, one column each, one graph; the
    dtype and shape as the Python mode's. The parameters are inputs: XLA would
    constant-fold every elementwise step on 10^5 broadcast constants, seconds of compile
    time."""
    inputs = [pt.vector(f"p{i}", dtype=dtype) for i in range(len(sets[0]))]
    values = [np.array(column, dtype=dtype) for column in zip(*sets)]
    make = lambda r, size: builder(*inputs, size=size, rng=r, dtype=dtype)  # noqa: E731
    x = draw(make, n=(N_DRAWS, len(sets)), inputs=inputs, values=values)
    reference = draw(make, n=(10, len(sets)), mode=PY_MODE, inputs=inputs, values=values)
    assert x.dtype == reference.dtype == dtype and x.shape[1:] == reference.shape[1:]
    for column, params in zip(x.T, sets):
        assert np.isfinite(column).all(), params
        assert_distribution(column, scipy_dist(*params))


def assert_distribution(samples, dist, *, discrete=False, sigmas=6.0, min_p=1e-4):
    """The draws have `dist`'s mean and variance (within `sigmas` standard errors) and
    its distribution: a Kolmogorov-Smirnov test (continuous) or a chi-square test on
    the values holding 99.9% of the mass (discrete) with p-value above `min_p`.

    The draws come from a fixed seed, so the outcome is the same on every run; the
    tolerances fail on a parameter off by a few percent at 10^5 draws.
    """
    import scipy.stats as st

    x = np.asarray(samples, dtype=np.float64).ravel()
    n = x.size
    mean, var, skew, kurt = (float(m) for m in dist.stats(moments="mvsk"))
    if np.isfinite(mean):
        assert abs(x.mean() - mean) <= sigmas * np.sqrt(var / n), f"mean {x.mean()}, expected {mean}"
    if np.isfinite(var) and np.isfinite(kurt):
        se = var * np.sqrt((kurt + 2) / n)  # the sample variance's standard error
        assert abs(x.var() - var) <= sigmas * se, f"variance {x.var()}, expected {var}"
    if not discrete:
        p = st.kstest(x, dist.cdf).pvalue
        assert p > min_p, f"Kolmogorov-Smirnov p-value {p:.2e}"
        return
    lo, hi = dist.ppf(0.0005), dist.ppf(0.9995)
    values = np.arange(lo, hi + 1)
    expected = dist.pmf(values) * n
    keep = expected >= 5
    observed = np.array([(x == v).sum() for v in values[keep]], dtype=np.float64)
    expected = expected[keep]
    # The rest of the mass (both tails) as one more cell.
    observed = np.append(observed, n - observed.sum())
    expected = np.append(expected, n - expected.sum())
    if expected[-1] < 5:
        observed[-2] += observed[-1]
        expected[-2] += expected[-1]
        observed, expected = observed[:-1], expected[:-1]
    p = st.chisquare(observed, expected).pvalue
    assert p > min_p, f"chi-square p-value {p:.2e} over {len(observed)} cells"


def device_put(value):
    """`value` as a device array of the CPU client our executables run on (jax's own
    client is another one)."""
    import jax

    from lowering.compile import get_backend

    return jax.device_put(np.asarray(value), get_backend("cpu").local_devices()[0])


def run_toy(n, dynamic, build, outputs=1):
    """Run `build(index)` (an i64 iota of n, as a value) in a module of its own; its
    float64 results as numpy arrays, and the text of the module compiled. With
    `dynamic`, the module takes the indices as a tensor<?xi32> and is specialized to n,
    as a size known only at run time is (its `if`s on that size folded)."""
    from jax.extend.mlir import ir
    from jax.extend.mlir.dialects import func

    from lowering._jax_internal import make_ir_context
    from lowering.builders import convert
    from lowering.compile import compile_module
    from lowering.passes import LEGALIZE_CHLO, run_pipeline, specialize_pipeline
    from lowering.types import tensor_type

    with make_ir_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            shape = (None if dynamic else n,)
            types = ir.FunctionType.get([tensor_type(shape, "int32")], [tensor_type(shape, "float64")] * outputs)
            fn = func.FuncOp("main", types)
            fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
            with ir.InsertionPoint(fn.add_entry_block()):
                func.return_(build(convert(fn.arguments[0], "int64")))
        if dynamic:
            run_pipeline(module, specialize_pipeline([f"tensor<{n}xi32>"]))
            run_pipeline(module, LEGALIZE_CHLO)
        text = str(module)
        exe = compile_module(module, "cpu")
    args = [device_put(np.arange(n, dtype=np.int32))]
    return [np.asarray(r[0]) for r in exe.execute_sharded(args).disassemble_into_single_device_arrays()], text
