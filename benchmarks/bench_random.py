"""Random draws on every PyTensor backend, in one run.

    python benchmarks/bench_random.py [--repeat N] [--only NAME ...]

Per workload and backend (FAST_RUN is the C backend; it draws with numpy): compile time (first call included) and the median time of a
call, its results read back as numpy arrays (JAX returns before its work is done
otherwise). Each function updates its shared Generator, as PyMC's do. Then, end to end,
`pm.sample_posterior_predictive` of the Poisson regression (`posterior-predictive`), and
ours again in a second process whose executables the opt-in disk cache holds.
Numbers depend on the machine; compare ratios within one run only.
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
from lowering.compile import DISK_CACHE_ENV  # noqa: E402

# PyTensor's default mode: its C VM, which runs RandomVariables' numpy perform.
MODES = ("STABLEHLO", "JAX", "NUMBA", "FAST_RUN")


def _draws(make):
    def build():
        rng = pytensor.shared(np.random.default_rng(0))
        next_rng, x = make(rng).owner.outputs
        return [x], {rng: next_rng}
    return build


def prior_predictive():
    """One draw of a hierarchical model's prior and prior predictive, the function
    `pm.sample_prior_predictive` calls once per draw."""
    import pymc as pm
    from pymc.pytensorf import collect_default_updates

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfNormal("tau", 2.5)
        theta = pm.Normal("theta", mu, tau, shape=8)
        pm.Normal("y", theta, np.linspace(9.0, 18.0, 8), observed=np.arange(8.0))
    outputs = [model[name] for name in ("mu", "tau", "theta", "y")]
    return outputs, collect_default_updates(outputs=outputs)


def mixed_prior_predictive(n: int = 4_000):
    """One prior predictive draw of a model with four gamma-family and count variables of
    n each (gamma, beta, negative binomial, Poisson), the function
    `pm.sample_prior_predictive` calls once per draw: a module of some 6,000 ops, past
    ELEMENTAL_MAX_OPS, whose rejection loops each fit it."""
    import pymc as pm
    from pymc.pytensorf import collect_default_updates

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Gamma("a", 2.0, 1.0, shape=n)
        pm.Beta("b", 2.0, 3.0, shape=n)
        pm.NegativeBinomial("c", 5.0, 0.3, shape=n)
        pm.Poisson("d", 20.0 * pm.math.exp(mu), shape=n)
    outputs = [model[name] for name in ("mu", "a", "b", "c", "d")]
    return outputs, collect_default_updates(outputs=outputs)


def normal_mixture(n: int = 10_000):
    """n draws of a two-component `pm.NormalMixture`: a categorical index per draw picks
    one of the components' normals."""
    from pymc.pytensorf import collect_default_updates

    x = _pymc().NormalMixture.dist(w=np.array([0.3, 0.7]), mu=np.array([0.0, 3.0]), sigma=np.array([1.0, 1.0]), size=n)
    return [x], collect_default_updates(outputs=[x])


def _sized_by_data(make, n: int = 20_000):
    """Draws sized by a shared array's shape (n rows), as PyMC's posterior predictive
    sizes an observed variable by its `pm.Data`: a size known only at run time."""
    def build():
        rng = pytensor.shared(np.random.default_rng(0))
        data = pytensor.shared(np.zeros(n), name="data")
        next_rng, x = make(rng, data.shape).owner.outputs
        return [x], {rng: next_rng}
    return build


_BETA = np.array([0.3, -0.2, 0.5])


def _regression_rows(n: int = 20_000) -> np.ndarray:
    return np.random.default_rng(1).normal(size=(n, len(_BETA)))


def poisson_regression_predictive():
    """One posterior predictive draw of a Poisson regression on 20,000 rows of `pm.Data`,
    the function `pm.sample_posterior_predictive` calls once per draw: means
    exp(1 + X beta) from 0.2 to 40 (most below 10: numpy's and our inversion), the size
    read from X's shape at run time."""
    rng = pytensor.shared(np.random.default_rng(0))
    X = pytensor.shared(_regression_rows(), name="X")
    next_rng, y = pt.random.poisson(pt.exp(1.0 + X @ _BETA), size=X.shape[:1], rng=rng).owner.outputs
    return [y], {rng: next_rng}


def posterior_predictive_end_to_end(mode: str, draws: int = 2000) -> float:
    """Seconds `pm.sample_posterior_predictive` takes for `draws` posterior draws of the
    Poisson regression above (compile included): its function, once per draw."""
    import arviz as az
    import pymc as pm
    import xarray as xr

    X = _regression_rows()
    rng = np.random.default_rng(2)
    with pm.Model() as model:
        data = pm.Data("X", X)
        b = pm.Normal("b", 0, 1, shape=len(_BETA))
        a = pm.Normal("a", 0, 1)
        pm.Poisson("y", pm.math.exp(a + data @ b), observed=rng.poisson(np.exp(1.0 + X @ _BETA)), shape=data.shape[0])
    posterior = xr.Dataset({
        "b": (("chain", "draw", "b_dim_0"), _BETA + 0.01 * rng.normal(size=(1, draws, len(_BETA)))),
        "a": (("chain", "draw"), 1.0 + 0.01 * rng.normal(size=(1, draws))),
    })
    start = time.perf_counter()
    with model:
        pm.sample_posterior_predictive(
            az.InferenceData(posterior=posterior), compile_kwargs={"mode": mode}, progressbar=False, random_seed=1,
        )
    return time.perf_counter() - start


WORKLOADS = {
    "prior-predictive": prior_predictive,
    "mixed-prior-predictive-4e3": mixed_prior_predictive,
    "normal-1e6": _draws(lambda r: pt.random.normal(0.0, 1.0, size=1_000_000, rng=r)),
    "gamma-1e6": _draws(lambda r: pt.random.gamma(2.5, scale=1.0, size=1_000_000, rng=r)),
    "beta-1e5": _draws(lambda r: pt.random.beta(0.5, 2.0, size=100_000, rng=r)),
    "poisson-1e5": _draws(lambda r: pt.random.poisson(20.0, size=100_000, rng=r)),
    "binomial-1e5": _draws(lambda r: pt.random.binomial(100, 0.3, size=100_000, rng=r)),
    "vonmises-1e5": _draws(lambda r: pt.random.vonmises(0.0, 2.0, size=100_000, rng=r)),
    "hypergeometric-1e5": _draws(lambda r: pt.random.hypergeometric(50, 50, 40, size=100_000, rng=r)),
    "poisson-3-1e5": _draws(lambda r: pt.random.poisson(3.0, size=100_000, rng=r)),
    "binomial-20-1e5": _draws(lambda r: pt.random.binomial(20, 0.2, size=100_000, rng=r)),
    "poisson-3-1e6": _draws(lambda r: pt.random.poisson(3.0, size=1_000_000, rng=r)),
    "poisson-regression-2e4": poisson_regression_predictive,
    "poisson-pm-data-2e4": _sized_by_data(lambda r, size: pt.random.poisson(20.0, size=size, rng=r)),
    # The posterior predictive of a Gamma or negative binomial regression on 4,000 rows.
    "gamma-pm-data-4e3": _sized_by_data(lambda r, size: pt.random.gamma(2.5, scale=1.0, size=size, rng=r), 4_000),
    "negative-binomial-pm-data-4e3": _sized_by_data(
        lambda r, size: pt.random.negative_binomial(5, 0.3, size=size, rng=r), 4_000,
    ),
    "beta-4e3": _draws(lambda r: pt.random.beta(2.0, 3.0, size=4_000, rng=r)),
    "dirichlet-1e4x10": _draws(lambda r: pt.random.dirichlet(np.ones(10), size=10_000, rng=r)),
    "mvnormal-1e4x10": _draws(lambda r: pt.random.multivariate_normal(np.zeros(10), np.eye(10) + 0.5, size=10_000, rng=r)),
    # PyMC's own RandomVariables: two normals an element, read together.
    "rice-1e5": _draws(lambda r: _pymc().Rice.dist(1.0, 1.0, size=100_000, rng=r)),
    "skew-normal-1e5": _draws(lambda r: _pymc().SkewNormal.dist(mu=0.0, sigma=1.0, alpha=3.0, size=100_000, rng=r)),
    "geometric-1e5": _draws(lambda r: pt.random.geometric(0.1, size=100_000, rng=r)),
    "categorical-5-1e5": _draws(lambda r: pt.random.categorical(np.full(5, 0.2), size=100_000, rng=r)),
    "normal-mixture-1e4": normal_mixture,
}


def _pymc():
    import pymc

    return pymc


END_TO_END = "posterior-predictive"


def time_mode(build, mode, repeat):
    outputs, updates = build()
    start = time.perf_counter()
    fn = pytensor.function([], outputs, updates=updates, mode=mode)
    [np.asarray(r) for r in fn()]
    compile_s = time.perf_counter() - start
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        [np.asarray(r) for r in fn()]
        samples.append(time.perf_counter() - t)
    return compile_s, statistics.median(samples)


CACHED = "STABLEHLO, disk cache"


def _second_process_with_disk_cache() -> float:
    """`posterior_predictive_end_to_end` of STABLEHLO in a fresh process whose executables
    a first process with the same opt-in disk cache compiled and stored."""
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, DISK_CACHE_ENV: cache}
        command = [sys.executable, __file__, "--end-to-end-seconds", "STABLEHLO"]
        runs = [subprocess.run(command, env=env, capture_output=True, text=True, check=True) for _ in range(2)]
    return float(runs[1].stdout.split()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--only", nargs="*", choices=[*WORKLOADS, END_TO_END], help="run these workloads only")
    parser.add_argument("--end-to-end-seconds", metavar="MODE", help=argparse.SUPPRESS)  # a child's run
    args = parser.parse_args()
    warnings.filterwarnings("ignore")  # JAX's "shared RNG is copied" warnings
    if args.end_to_end_seconds:
        print(posterior_predictive_end_to_end(args.end_to_end_seconds))
        return 0
    for name, build in WORKLOADS.items():
        if args.only and name not in args.only:
            continue
        repeat = args.repeat * 100 if name == "prior-predictive" else args.repeat
        rows = {}
        for mode in MODES:
            try:
                rows[mode] = time_mode(build, mode, repeat)
            except Exception as exc:  # a backend without a rule for these Ops
                print(f"{name}: {mode} failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
        ours = rows["STABLEHLO"][1]
        print(f"\n{name}")
        print(f"{'mode':<10} {'compile s':>10} {'per call us':>12} {'vs STABLEHLO':>13}")
        for mode, (compile_s, per_call) in rows.items():
            print(f"{mode:<10} {compile_s:>10.3f} {per_call * 1e6:>12.1f} {per_call / ours:>12.2f}x")
    if not args.only or END_TO_END in args.only:
        import logging

        logging.getLogger("pymc").setLevel(logging.ERROR)
        print(f"\n{END_TO_END}: pm.sample_posterior_predictive, 2,000 draws of poisson-regression-2e4")
        seconds = {mode: posterior_predictive_end_to_end(mode) for mode in MODES}
        seconds[CACHED] = _second_process_with_disk_cache()
        for mode, s in seconds.items():
            print(f"{mode:<22} {s:>7.2f} s {s / seconds['STABLEHLO']:>8.2f}x")
        print(f"({CACHED}: a second process with {DISK_CACHE_ENV} set, after a first filled it. NUMBA's and\n"
              " FAST_RUN's compiled code is cached on disk by default: theirs are the warm numbers once\n"
              " this machine has run them before.)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
