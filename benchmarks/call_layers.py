"""Where one call's time goes: `python benchmarks/call_layers.py [MODEL ...]`.

For each workload of bench_models.py, the median time (µs) of one call through each
layer of the STABLEHLO path, outermost first, next to NUMBA's whole call:

  function      pytensor.function(..., mode="STABLEHLO")(*args), what a sampler pays
  dispatch      jaxlib's C++ dispatch: numpy arguments to device buffers, execute, finish
  execute+read  XLA's executable on buffers already on the device, results read as numpy
  execute       the executable alone
"""

from __future__ import annotations

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

from lowering._jax_internal import enable_x64  # noqa: E402


def median_us(fn, repeat: int = 3000) -> float:
    for _ in range(200):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def layers(name: str) -> dict[str, float]:
    graph = MODELS[name]()
    args = call_arguments(graph)
    numba = pytensor.function(graph.inputs, graph.outputs, mode="NUMBA", trust_input=True)
    ours = pytensor.function(graph.inputs, graph.outputs, mode="STABLEHLO", trust_input=True)
    ours(*args)
    compiled = ours.vm.jit_fn.compiled
    (exe,) = [e for e in compiled._by_shapes.values() if e is not None]
    # The dispatch's arguments as a call passes them: small float64 inputs packed into
    # one vector, and the constants the executable does not hold.
    if compiled._packing is not None:
        call = compiled._packed_call(args)
    else:
        call = [*args, *compiled._constant_buffers]
    buffers = [compiled._put(a, np.dtype(a.dtype)) for a in call]

    def execute_and_read():
        results = exe.xla.execute_sharded(buffers).disassemble_into_single_device_arrays()
        return [np.asarray(r[0]) for r in results]

    with enable_x64():
        dispatch = median_us(lambda: compiled._dispatch.call(*call))
    return {
        "NUMBA": median_us(lambda: numba(*args)),
        "function": median_us(lambda: ours(*args)),
        "dispatch": dispatch,
        "execute+read": median_us(execute_and_read),
        "execute": median_us(lambda: exe.xla.execute_sharded(buffers)),
    }


def main() -> int:
    names = sys.argv[1:] or ["eight-schools", "linear-regression", "hierarchical-regression"]
    print(f"{'workload':26s}" + "".join(f"{c:>14s}" for c in ["NUMBA", "function", "dispatch", "execute+read", "execute"]))
    for name in names:
        row = layers(name)
        print(f"{name:26s}" + "".join(f"{v:12.1f}µs" for v in row.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
