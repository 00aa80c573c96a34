"""`python -m lowering`: lower a built-in example graph, print its StableHLO, run it with
XLA and check the result against PyTensor's Python mode."""

from __future__ import annotations

import sys

import numpy as np
import pytensor
from pytensor.compile.mode import Mode

from lowering import lower
from lowering.examples import example


def main() -> int:
    graph = example("elemwise")
    lowered = lower(graph.fgraph())
    print("// StableHLO for exp(x * 2 + y).sum(axis=1), x: matrix, y: vector")
    print(lowered.as_text())

    args = graph.values
    (got,) = lowered.compile()(*args)
    expected = pytensor.function(graph.inputs, graph.outputs[0], mode=Mode(linker="py", optimizer=None))(*args)
    print("result:  ", got)
    print("expected:", expected, "(PyTensor Python mode)")
    ok = got.dtype == expected.dtype and np.allclose(got, expected, rtol=1e-12)

    f = pytensor.function(graph.inputs, graph.outputs[0], mode="STABLEHLO")
    ok = ok and np.allclose(f(*args), expected, rtol=1e-12)
    print("matches PyTensor's Python mode:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
