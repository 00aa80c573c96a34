"""Backends side by side in one process: `python benchmarks/interleaved.py MODEL [MODE ...]`.

bench_models.py times each backend in a process of its own, one median of its calls.
This project's VM has slow phases of a few hundred milliseconds that such a median can
land in whole (one build of the beta regression timed 105 µs a call in some batches of
300 calls and 154 in others). Here every mode (default: STABLEHLO and NUMBA) is built in
one process and timed in alternating batches, so a slow phase hits all of them; each
mode's best and median batch medians are printed, and the ratios of the best to the
first mode's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytensor

sys.path.insert(0, str(Path(__file__).parent))
warnings.filterwarnings("ignore")

from bench_models import MODELS, call_arguments  # noqa: E402


def batch_median(fn, args, calls: int) -> float:
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        [np.asarray(r) for r in fn(*args)]
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=list(MODELS))
    parser.add_argument("modes", nargs="*", default=["STABLEHLO", "NUMBA"])
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--calls", type=int, default=200, help="calls per batch")
    args = parser.parse_args()
    graph = MODELS[args.model]()
    values = call_arguments(graph)
    fns = {mode: pytensor.function(graph.inputs, graph.outputs, mode=mode, trust_input=True) for mode in args.modes}
    for fn in fns.values():
        for _ in range(50):
            fn(*values)
    medians = {mode: [] for mode in fns}
    for _ in range(args.batches):
        for mode, fn in fns.items():
            medians[mode].append(batch_median(fn, values, args.calls))
    first = min(medians[args.modes[0]])
    print(f"{args.model}: {args.batches} alternating batches of {args.calls} calls, µs a call")
    for mode, ms in medians.items():
        print(f"  {mode:<17} best {min(ms) * 1e6:9.1f}  median {statistics.median(ms) * 1e6:9.1f}"
              f"  best vs {args.modes[0]}: {min(ms) / first:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
