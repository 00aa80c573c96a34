"""XLA:CPU's two code generators on the same graphs: first call and per-call time by size.

    python benchmarks/code_generators.py [--only NAME ...] [--sizes N ...] [--seconds S]

`lowering.compile` compiles a module with XLA's elemental emitter where
`suits_elemental_emitter` says so (every tensor, loop states included, at most
`SMALL_TENSOR_ELEMENTS` elements, no scatter), and with its MLIR fusion emitters (XLA's
default) otherwise. This builds each workload both ways whatever that rule says, in one
process, and alternates their calls in blocks so that both see the same machine. It prints
the first call's time (mostly XLA's compile) and the median per-call time of each, their
ratio, and whether the results are equal to the bit. `indexing` has scatters, which the rule
keeps on the fusion emitters at every size; `scan` and `gammainc` have loops; `gammaln`,
`betaln` and `erfcinv` are long elementwise code, where a kernel that writes over its
input runs one element at a time on the elemental emitter.

    python benchmarks/code_generators.py --modules DIR ... [--rounds N] [--all]

compares the same way the modules `capture_modules.py` kept: those the rule gives the
elemental emitter, or with `--all` every one.
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

import lowering  # noqa: E402  (registers the STABLEHLO mode)
import lowering.types  # noqa: E402
import lowering.compile as comp  # noqa: E402


def glm(n):
    """Logistic regression's logp and gradient, X of n x 20."""
    X, y, b = pt.dmatrix("X"), pt.dvector("y"), pt.dvector("b")
    z = X @ b
    logp = (y * z - pt.softplus(z)).sum() - 0.5 * (b**2).sum()
    rng = np.random.default_rng(0)
    values = [rng.normal(size=20), rng.normal(size=(n, 20)), (rng.random(n) < 0.5).astype(float)]
    return [b, X, y], [logp, pytensor.grad(logp, b)], values


def elementwise(n):
    x = pt.dvector("x")
    out = pt.log1p(pt.exp(-abs(x))) * pt.tanh(x) + pt.sqrt(abs(x)) / (1 + x**2)
    return [x], [out, out.sum()], [np.random.default_rng(0).normal(size=n)]


def float32_elementwise(n):
    x = pt.fvector("x")
    return [x], [pt.exp(x) * pt.cos(x) - pt.log1p(x**2)], [np.random.default_rng(0).normal(size=n).astype("float32")]


def reductions(n):
    x = pt.dmatrix("x")
    outputs = [x.sum(0), x.max(1), pt.special.softmax(x, axis=1), pt.logsumexp(x, axis=0)]
    return [x], outputs, [np.random.default_rng(0).normal(size=(n // 8, 8))]


def indexing(n):
    x, i = pt.dvector("x"), pt.lvector("i")
    rng = np.random.default_rng(0)
    return [x, i], [pt.inc_subtensor(x[i], 1.0), x[i] * 2, pt.cumsum(x)], [rng.normal(size=n), rng.integers(0, n, n // 2)]


def scan(n):
    x, w = pt.dvector("x"), pt.dscalar("w")
    hs = pytensor.scan(lambda x_t, h: pt.tanh(w * h + x_t), sequences=[x], outputs_info=[pt.zeros(())],
                       return_updates=False)
    cost = (hs**2).sum()
    return [x, w], [cost, *pytensor.grad(cost, [x, w])], [np.random.default_rng(0).normal(size=n), np.float64(0.7)]


def gammainc(n):
    """The regularized incomplete gamma function: series and continued fractions in loops."""
    a, x = pt.dvector("a"), pt.dvector("x")
    rng = np.random.default_rng(0)
    return [a, x], [pt.gammainc(a, x)], [rng.uniform(0.5, 20, n), rng.uniform(0.1, 30, n)]


def gammaln(n):
    """lgamma's long elementwise code (benchmarks/README.md, "Kernels that write over their inputs")."""
    x = pt.dvector("x")
    return [x], [pt.gammaln(x)], [np.random.default_rng(0).uniform(0.6, 20, n)]


def betaln(n):
    """log B(a, b): three lgammas in one batch."""
    x = pt.dvector("x")
    return [x], [pt.special.betaln(x, x * 0.5 + 1)], [np.random.default_rng(0).uniform(0.5, 20, n)]


def erfcinv(n):
    """Newton steps on erfcx, itself a product of exps and CHLO's erfc."""
    x = pt.dvector("x")
    return [x], [pt.erfcinv(x)], [np.random.default_rng(0).uniform(0.1, 1.9, n)]


WORKLOADS = {f.__name__: f for f in (glm, elementwise, float32_elementwise, reductions, indexing, scan, gammainc,
                                     gammaln, betaln, erfcinv)}


def build(inputs, outputs, values, elemental: bool):
    """The function and its first call's time (and result), every module compiled with the
    elemental emitter or with the fusion emitters."""
    rule = comp.suits_elemental_emitter
    comp.suits_elemental_emitter = lambda module: elemental
    try:
        fn = pytensor.function(inputs, outputs, mode="STABLEHLO", trust_input=True)
        start = time.perf_counter()
        result = fn(*values)
        return fn, time.perf_counter() - start, result
    finally:
        comp.suits_elemental_emitter = rule


def compare(name, n, seconds):
    inputs, outputs, values = WORKLOADS[name](n)
    fusion, fusion_first, fusion_result = build(inputs, outputs, values, elemental=False)
    elemental, elemental_first, elemental_result = build(inputs, outputs, values, elemental=True)
    same = all(np.array_equal(a, b, equal_nan=True) for a, b in zip(fusion_result, elemental_result))
    samples = {fusion: [], elemental: []}
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for fn, times in samples.items():
            for _ in range(20):
                t = time.perf_counter()
                fn(*values)
                times.append(time.perf_counter() - t)
    per_call = [statistics.median(samples[fn]) * 1e6 for fn in (fusion, elemental)]
    print(f"{name:20s} {n:7d} {fusion_first * 1e3:8.0f} {elemental_first * 1e3:8.0f} "
          f"{per_call[0]:10.1f} {per_call[1]:10.1f} {per_call[1] / per_call[0]:7.2f}x  {same}", flush=True)


def _arguments(module, rng):
    """Random arguments for @main: normal floats, integers in [0, 3), random bools."""
    main = next(op for op in module.body.operations if op.attributes["sym_name"].value == "main")
    values = []
    for argument in main.regions[0].blocks[0].arguments:
        dtype = np.dtype(lowering.types.dtype_of(argument.type))
        shape = tuple(argument.type.shape)
        if dtype == np.bool_:
            values.append(rng.random(shape) < 0.5)
        elif np.issubdtype(dtype, np.integer):
            values.append(rng.integers(0, 3, shape).astype(dtype))
        elif np.issubdtype(dtype, np.complexfloating):
            values.append((rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype))
        else:
            values.append(rng.normal(size=shape).astype(dtype))
    return values


def compare_modules(directories, rounds: int, every: bool = False):
    """Every captured module (`capture_modules.py`) the rule gives the elemental emitter
    (`every`: every one): compile time and per-run time of its executable both ways, on
    random arguments."""
    import jax
    import jax.extend.backend as xb
    from jax.extend.mlir import ir

    from lowering._jax_internal import DeviceList, enable_x64, load_lapack, make_ir_context

    backend = comp.get_backend("cpu")
    device = backend.local_devices()[0]
    load_lapack()
    rng = np.random.default_rng(0)
    rows, skipped, differ = [], 0, 0
    for path in sorted(p for d in directories for p in Path(d).glob("*.mlirbc")):
        bytecode = path.read_bytes()
        with make_ir_context():
            module = ir.Module.parse(bytecode)
            if not (every or comp.suits_elemental_emitter(module)):
                continue
            try:
                values = _arguments(module, rng)
            except KeyError:  # an element type numpy has no dtype for
                skipped += 1
                continue
            lapack = b"lapack_" in bytecode
        if lapack and any(np.issubdtype(v.dtype, np.integer) for v in values):
            skipped += 1  # random pivots would have LAPACK read where they point
            continue
        executables, compile_s = [], []
        for overrides in ((), comp.elemental_overrides("cpu")):
            options = xb.get_compile_options(num_replicas=1, num_partitions=1)
            ours = comp.vector_overrides("cpu") + comp.reduction_overrides("cpu")  # as every compile has
            options.env_option_overrides = list(overrides + ours)
            start = time.perf_counter()
            executables.append(backend.compile_and_load(bytecode, DeviceList((device,)), options))
            compile_s.append(time.perf_counter() - start)
        samples = [[], []]
        with enable_x64():
            buffers = [jax.device_put(v, device) for v in values]
            for _ in range(rounds):
                for exe, times in zip(executables, samples):
                    for _ in range(10):
                        if lapack:  # LAPACK writes over its operands
                            buffers = [jax.device_put(v, device) for v in values]
                        start = time.perf_counter()
                        for result in exe.execute_sharded(buffers).disassemble_into_single_device_arrays():
                            result[0].block_until_ready()
                        times.append(time.perf_counter() - start)
            outputs = []
            for exe in executables:
                buffers = [jax.device_put(v, device) for v in values]
                outputs.append([np.asarray(r[0]) for r in exe.execute_sharded(buffers).disassemble_into_single_device_arrays()])
        differ += not all(np.array_equal(a, b, equal_nan=True) for a, b in zip(*outputs))
        fusion, elemental = (statistics.median(t) for t in samples)
        rows.append((elemental / fusion, fusion, elemental, *compile_s, path.name))
    ratios = np.array([r[0] for r in rows])
    chosen = "captured" if every else "the rule gives the elemental emitter"
    print(f"{len(rows)} modules {chosen} ({skipped} skipped: arguments not generated); "
          f"results not equal to the bit in {differ}")
    print(f"per run, elemental / fusion: median {np.median(ratios):.3f}, 5th-95th percentile "
          f"{np.percentile(ratios, 5):.2f}-{np.percentile(ratios, 95):.2f}, max {ratios.max():.2f}")
    fusion_c, elemental_c = sum(r[3] for r in rows), sum(r[4] for r in rows)
    print(f"compile: fusion {fusion_c:.1f} s, elemental {elemental_c:.1f} s ({elemental_c / fusion_c:.2f}x)")
    for ratio, fusion, elemental, _, _, name in sorted(rows)[-5:]:
        print(f"  {ratio:.2f}x  {fusion * 1e6:7.1f} / {elemental * 1e6:7.1f} us  {name}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="*", type=int, default=[16, 128, 256, 512, 2048, 8192])
    parser.add_argument("--only", nargs="*", choices=sorted(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument("--seconds", type=float, default=3.0, help="time spent calling each pair")
    parser.add_argument("--modules", nargs="*", metavar="DIR",
                        help="compare on the modules capture_modules.py kept in these directories instead")
    parser.add_argument("--rounds", type=int, default=15, help="with --modules: blocks of 10 runs each way")
    parser.add_argument("--all", action="store_true", help="with --modules: every module, not only the rule's")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.modules:
        compare_modules(args.modules, args.rounds, args.all)
        return 0
    print(f"{'workload':20s} {'elements':>7s} {'1st call ms':>17s} {'per call us':>21s} {'ratio':>8s}  bitwise")
    print(f"{'':20s} {'':7s} {'fusion':>8s} {'element.':>8s} {'fusion':>10s} {'element.':>10s}")
    for name in args.only:
        for n in args.sizes:
            compare(name, n, args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
