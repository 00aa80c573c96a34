"""Per-call time of PyMC models' logp+dlogp on every PyTensor backend, in one run.

    python benchmarks/bench_models.py [--repeat N]

Prints, per model, the compile time (first call included) and the median per-call time
for STABLEHLO, JAX, NUMBA and C, and each backend's ratio to STABLEHLO. Numbers depend
on the machine; compare ratios within one run only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pytensor  # noqa: E402

import lowering  # noqa: E402,F401  (registers the STABLEHLO mode)
from lowering.examples import example, model_graph  # noqa: E402

MODES = ("STABLEHLO", "JAX", "NUMBA", "C")


def linear_regression():
    import pymc as pm

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 10))
    y = X @ rng.normal(size=10) + rng.normal(size=500)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=10)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", X @ beta, sigma, observed=y)
    return model_graph(model, "linear-regression")


def scan_rnn(steps: int = 1000, gradient: bool = False):
    """A 1,000-step Scan, h_t = tanh(w * h_{t-1} + x_t), and its gradient."""
    import pytensor.tensor as pt

    from lowering.examples import Graph

    x, w, h0 = pt.dvector("x"), pt.dscalar("w"), pt.dscalar("h0")
    hs = pytensor.scan(
        lambda x_t, h: pt.tanh(w * h + x_t), sequences=[x], outputs_info=[h0], return_updates=False
    )
    cost = (hs**2).sum()
    outputs = [cost, *pytensor.grad(cost, [x, w])] if gradient else [hs]
    rng = np.random.default_rng(0)
    name = f"scan-{steps}" + ("-grad" if gradient else "")
    return Graph(name, [x, w, h0], outputs, [rng.normal(size=steps), np.float64(0.7), np.float64(0.1)])


def gp_marginal(n: int):
    """PyMC's GP marginal likelihood: ExpQuad kernel plus noise, Cholesky-based MvNormal."""
    import pymc as pm

    rng = np.random.default_rng(0)
    X = np.sort(rng.uniform(0, 10, size=n))[:, None]
    y = np.sin(X[:, 0]) + 0.3 * rng.normal(size=n)
    with pm.Model() as model:
        ell = pm.Gamma("ell", 2, 1)
        eta = pm.HalfNormal("eta", 1)
        sigma = pm.HalfNormal("sigma", 1)
        gp = pm.gp.Marginal(cov_func=eta**2 * pm.gp.cov.ExpQuad(1, ell))
        gp.marginal_likelihood("y", X=X, y=y, sigma=sigma)
    return model_graph(model, f"gp-marginal-{n}")


MODELS = {
    "eight-schools": lambda: example("eight-schools"),
    "linear-regression": linear_regression,
    "scan-1000": scan_rnn,
    "scan-1000-grad": lambda: scan_rnn(gradient=True),
    "garch": lambda: example("garch"),
    "gp-marginal-100": lambda: gp_marginal(100),
    "gp-marginal-1000": lambda: gp_marginal(1000),
}


def time_mode(graph, mode, repeat):
    start = time.perf_counter()
    fn = pytensor.function(graph.inputs, graph.outputs, mode=mode, trust_input=True)
    args = [np.asarray(v, dtype=i.type.dtype) for v, i in zip(graph.values, graph.inputs)]
    result = fn(*args)
    compile_s = time.perf_counter() - start
    for _ in range(10):
        fn(*args)
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn(*args)
        samples.append(time.perf_counter() - t)
    return compile_s, statistics.median(samples), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2000)
    parser.add_argument("--only", nargs="*", choices=list(MODELS), help="run these workloads only")
    args = parser.parse_args()
    for name, build in MODELS.items():
        if args.only and name not in args.only:
            continue
        graph = build()
        rows, reference = {}, None
        for mode in MODES:
            try:
                rows[mode] = time_mode(graph, mode, args.repeat)
            except Exception as exc:  # a backend missing on this machine
                print(f"{name}: {mode} failed: {type(exc).__name__}: {exc}")
        reference = rows["STABLEHLO"][2]
        ours = rows["STABLEHLO"][1]
        print(f"\n{name}")
        print(f"{'mode':<10} {'compile s':>10} {'per call us':>12} {'vs STABLEHLO':>13}  same result")
        for mode, (compile_s, per_call, result) in rows.items():
            same = all(np.allclose(a, b, rtol=1e-6) for a, b in zip(result, reference))
            print(f"{mode:<10} {compile_s:>10.3f} {per_call * 1e6:>12.1f} {per_call / ours:>12.2f}x  {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
