"""`python -m lowering`: lower a built-in example graph, print its StableHLO, run it with
XLA and check the result against PyTensor's Python mode."""

from __future__ import annotations

import sys

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.compile.mode import Mode
from pytensor.graph.fg import FunctionGraph

from lowering import lower


def main() -> int:
    x = pt.matrix("x")
    y = pt.vector("y")
    out = pt.exp(x * 2 + y).sum(axis=1)

    lowered = lower(FunctionGraph([x, y], [out]))
    print("// StableHLO for exp(x * 2 + y).sum(axis=1), x: matrix, y: vector")
    print(lowered.as_text())

    rng = np.random.default_rng(0)
    args = (rng.normal(size=(3, 4)), np.arange(4.0) / 4)
    (got,) = lowered.compile()(*args)
    expected = pytensor.function([x, y], out, mode=Mode(linker="py", optimizer=None))(*args)
    print("result:  ", got)
    print("expected:", expected, "(PyTensor Python mode)")
    ok = got.dtype == expected.dtype and np.allclose(got, expected, rtol=1e-12)

    f = pytensor.function([x, y], out, mode="STABLEHLO")
    ok = ok and np.allclose(f(*args), expected, rtol=1e-12)
    print("matches PyTensor's Python mode:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
