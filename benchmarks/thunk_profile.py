"""Where XLA spends a call: `python benchmarks/thunk_profile.py MODEL [MODE ...] [--top N]`.

XLA:CPU runs an executable as thunks (a fused kernel, a LAPACK custom call, a dot, a
copy) and marks each with a profiler event named after it. For each mode (default:
STABLEHLO and JAX), the workload of bench_models.py is built once and traced over
`--calls` calls with `jax.profiler`, alternating modes over `--rounds` rounds; each
thunk's time per call is its least over the rounds. Printed per mode: the totals of
library calls (LAPACK), dots and everything else (fused elementwise kernels, copies,
gathers), and the `--top` thunks by time. The names are the ones in the optimized HLO
(`Compiled.specialized_text` shows the module before XLA's passes, `XLA_FLAGS=
--xla_dump_to=DIR` after them): a fusion that does the same work in two modes is named
alike. A thunk's time runs from its start to its end, waits for the pool's threads
included; thunks run concurrently on a multi-core machine, so the totals may exceed a
call's wall time.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytensor

sys.path.insert(0, str(Path(__file__).parent))
warnings.filterwarnings("ignore")

import jax  # noqa: E402
from bench_models import MODELS, call_arguments  # noqa: E402

_LIBRARY = ("Cholesky", "cholesky", "SolveTriangular", "triangular_solve", "lapack", "Eigh", "eigh", "LU", "lu")
_DOT = ("Dot", "dot", "ynn")
_RUNTIME = ("ThunkExecutor", "ThreadpoolListener", "PjitFunction", "CommonPjRt", "$", "DevicePut", "Slinky", "end: ")


def kind(name: str) -> str | None:
    """The bucket a trace event's name falls in, None for the runtime's own events."""
    if name.startswith(_RUNTIME) or " " in name:
        return None
    if name.startswith(_LIBRARY):
        return "library"
    if name.startswith(_DOT):
        return "dot"
    return "other"


def thunk_times(fn, args, calls: int) -> dict[str, float]:
    """ms per call of each thunk over `calls` traced calls."""
    with tempfile.TemporaryDirectory() as directory:
        with jax.profiler.trace(directory, create_perfetto_trace=True):
            for _ in range(calls):
                [np.asarray(r) for r in fn(*args)]
        (trace,) = Path(directory).glob("**/*.trace.json.gz")
        events = json.load(gzip.open(trace))["traceEvents"]
    starts, ends = collections.defaultdict(list), collections.defaultdict(list)
    for event in events:
        if event.get("ph") != "X":
            continue
        name = event["name"]
        if name.startswith("end: "):
            ends[name[5:]].append(event["ts"] + event["dur"])
        elif kind(name) is not None:
            starts[name].append((event["ts"], event["dur"]))
    totals = collections.Counter()
    for name, begun in starts.items():
        # A thunk split over the pool's threads (or waiting on one) reports its start and
        # its "end: NAME" as two events: its time runs to the end.
        finished = sorted(ends.get(name, []))
        for ts, dur in sorted(begun):
            while finished and finished[0] < ts:
                finished.pop(0)
            totals[name] += max(dur, finished.pop(0) - ts if finished else 0)
    return {name: us / calls / 1000 for name, us in totals.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=sorted(MODELS))
    parser.add_argument("modes", nargs="*", default=["STABLEHLO", "JAX"])
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--top", type=int, default=15)
    options = parser.parse_args()
    graph = MODELS[options.model]()
    args = call_arguments(graph)
    functions = {m: pytensor.function(graph.inputs, graph.outputs, mode=m, trust_input=True) for m in options.modes}
    for fn in functions.values():
        for _ in range(3):
            [np.asarray(r) for r in fn(*args)]
    best = {m: {} for m in options.modes}
    for _ in range(options.rounds):
        for mode, fn in functions.items():
            for name, ms in thunk_times(fn, args, options.calls).items():
                best[mode][name] = min(ms, best[mode].get(name, ms))
    for mode, times in best.items():
        buckets = collections.Counter()
        for name, ms in times.items():
            buckets[kind(name)] += ms
        summary = ", ".join(f"{k} {buckets[k]:.2f}" for k in ("library", "dot", "other"))
        print(f"{options.model} {mode}: ms per call: {summary}")
        for name, ms in sorted(times.items(), key=lambda item: -item[1])[:options.top]:
            print(f"  {ms:9.3f}  {name if len(name) <= 100 else name[:70] + '...' + name[-27:]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
