"""Single Ops on every PyTensor backend, in one run.

    python benchmarks/bench_ops.py [--repeat N] [--only NAME ...]

Per workload and backend: the seconds to build the function and make its first call, the
median time of a call with `trust_input` (results read back as numpy arrays; JAX returns
before its work is done otherwise), and each backend's ratio to STABLEHLO. An input of
shape `(None,)` has a size known only at run time, as most PyTensor graphs' inputs do; a
static shape is lowered with it. Numbers depend on the machine; compare ratios within one
run only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pytensor  # noqa: E402
import pytensor.tensor as pt  # noqa: E402

import lowering  # noqa: E402,F401  (registers the STABLEHLO mode)

MODES = ("STABLEHLO", "JAX", "NUMBA", "FAST_RUN")


def _scan(shape: tuple[int, ...], static: bool, op=pt.cumsum, axis=None, dtype: str = "float64"):
    def build():
        x = pt.tensor("x", dtype=dtype, shape=shape if static else (None,) * len(shape))
        values = np.random.default_rng(0).normal(size=shape)
        if op is pt.cumprod:  # (a product of normals underflows within a few hundred)
            values = 1 + 1e-3 * values
        return [x], [op(x, axis=axis)], [values.astype(dtype)]
    return build


def _hyp2f1(n: int, x_from: float):
    """hyp2f1 of n points: a, b, c uniform in [-5, 5], x in [x_from, 1) (near 1 the series
    takes Cephes' 10,000 terms)."""
    def build():
        a, b, c, x = (pt.dvector(name) for name in "abcx")
        rng = np.random.default_rng(0)
        values = [rng.uniform(-5, 5, n) for _ in range(3)] + [rng.uniform(x_from, 1, n)]
        return [a, b, c, x], [pt.hyp2f1(a, b, c, x)], values
    return build


def _hyp2f1_grad(n: int):
    """The gradient of sum(hyp2f1) wrt a, b and c (PyTensor's ScalarLoops, a while loop
    each) at n points: a, b in [0.1, 3], c in [3.5, 6], x in [-0.9, 0.9]."""
    def build():
        a, b, c, x = (pt.dvector(name) for name in "abcx")
        rng = np.random.default_rng(0)
        values = [rng.uniform(0.1, 3, n), rng.uniform(0.1, 3, n), rng.uniform(3.5, 6, n), rng.uniform(-0.9, 0.9, n)]
        return [a, b, c, x], pytensor.grad(pt.hyp2f1(a, b, c, x).sum(), [a, b, c]), values
    return build


def _incomplete(name: str, n: int, grad: bool = False):
    """gammainc(a, x) or betainc(a, b, x/200) of n points, or (`grad`) the gradient of its
    sum wrt a (ScalarLoops): a, b uniform in [0.1, 100], x in [0, 200] (the series' and
    continued fractions' steps vary from point to point)."""
    def build():
        rng = np.random.default_rng(0)
        a, b, x = (rng.uniform(0.1, 100, n), rng.uniform(0.1, 100, n), rng.uniform(0, 200, n))
        if name == "gammainc":
            inputs, values = [pt.dvector("a"), pt.dvector("x")], [a, x]
            out = pt.gammainc(*inputs)
        else:
            inputs, values = [pt.dvector("a"), pt.dvector("b"), pt.dvector("x")], [a, b, x / 200]
            out = pt.betainc(*inputs)
        return inputs, [pytensor.grad(out.sum(), inputs[0]) if grad else out], values
    return build


def _bessel(name: str, n: int):
    """iv, jv or kve of n points: v uniform in [0, 20], x in [0, 100]."""
    def build():
        v, x = pt.dvector("v"), pt.dvector("x")
        rng = np.random.default_rng(0)
        return [v, x], [getattr(pt, name)(v, x)], [rng.uniform(0, 20, n), rng.uniform(0, 100, n)]
    return build


def _gamma(n: int, high: float):
    """gamma of n points uniform in [0.1, high): below 25 it is the recurrence's product,
    from 25 on Stirling's formula in double-double, only when some element is there."""
    def build():
        x = pt.dvector("x")
        return [x], [pt.gamma(x)], [np.random.default_rng(0).uniform(0.1, high, n)]
    return build


WORKLOADS = {
    **{f"cumsum-{label}-{'static' if static else 'run-time'}": _scan((n,), static)
       for n, label in ((1000, "1e3"), (100_000, "1e5"), (1_000_000, "1e6")) for static in (False, True)},
    "cumsum-1e5-int64-run-time": _scan((100_000,), False, dtype="int64"),
    "cumsum-1e5-float32-run-time": _scan((100_000,), False, dtype="float32"),
    "cumprod-1e5-run-time": _scan((100_000,), False, op=pt.cumprod),
    **{f"cumsum-1000x100-axis{axis}-run-time": _scan((1000, 100), False, axis=axis) for axis in (0, 1)},
    **{f"hyp2f1-{n}": _hyp2f1(n, -3.0) for n in (20, 200, 2000)},
    "hyp2f1-2000-near-one": _hyp2f1(2000, 0.9),
    **{f"{name}-{label}": _incomplete(name, n) for name in ("gammainc", "betainc")
       for n, label in ((2000, "2e3"), (10_000, "1e4"), (100_000, "1e5"))},
    "hyp2f1-grad-2000": _hyp2f1_grad(2000),
    **{f"{name}-1e4": _bessel(name, 10_000) for name in ("iv", "jv", "kve")},
    "gamma-1e4-below-25": _gamma(10_000, 25.0),
    "gamma-1e4-to-170": _gamma(10_000, 170.0),
    **{f"{name}-grad-{label}": _incomplete(name, n, grad=True) for name in ("gammainc", "betainc")
       for n, label in ((10_000, "1e4"), (100_000, "1e5"))},
}


def time_mode(build, mode, repeat):
    """(seconds to build the function and make its first call, median seconds a call,
    the results)."""
    inputs, outputs, values = build()
    start = time.perf_counter()
    fn = pytensor.function(inputs, outputs, mode=mode, trust_input=True)
    expected = [np.asarray(r) for r in fn(*values)]
    first = time.perf_counter() - start
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        [np.asarray(r) for r in fn(*values)]
        samples.append(time.perf_counter() - t)
    return first, statistics.median(samples), expected


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--only", nargs="*", choices=list(WORKLOADS), help="run these workloads only")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    for name, build in WORKLOADS.items():
        if args.only and name not in args.only:
            continue
        rows = {}
        for mode in MODES:
            try:
                rows[mode] = time_mode(build, mode, args.repeat)
            except Exception as exc:  # a backend without a rule for these Ops
                print(f"{name}: {mode} failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
        _, ours, ours_values = rows["STABLEHLO"]
        print(f"\n{name}")
        print(f"{'mode':<10} {'first call s':>12} {'per call us':>12} {'vs STABLEHLO':>13}  same result")
        for mode, (first, per_call, values) in rows.items():
            same = all(np.allclose(a, b, rtol=1e-10, equal_nan=True) for a, b in zip(values, ours_values))
            print(f"{mode:<10} {first:>12.2f} {per_call * 1e6:>12.1f} {per_call / ours:>12.2f}x  {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
