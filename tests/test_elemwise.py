"""The Elemwise rule itself: broadcasting, several outputs, Composite."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.compile.mode import Mode
from pytensor.tensor.elemwise import Elemwise

from lowering.linker import EXCLUDED_REWRITES, StableHLOLinker
from tests.helpers import compare_with_py


def test_composite_with_constants_and_several_outputs():
    a, b = ps.float64("a"), ps.float64("b")
    inner_outs = [ps.exp(a * 2.0) + b, ps.switch(a > b, a, b - 1.5)]
    composite = Elemwise(ps.Composite([a, b], inner_outs))
    x, y = pt.matrix("x"), pt.matrix("y", shape=(1, None))
    out1, out2 = composite(x, y)
    compare_with_py([x, y], [out1, out2], [np.arange(6.0).reshape(2, 3), np.array([[0.5, 3.0, -1.0]])])


def test_fusion_rewrites_produce_composites_we_lower():
    x, y = pt.vector("x"), pt.vector("y")
    out = pt.exp(x * 2 + y) / (1 + pt.log1p(pt.abs(y))) - x**2
    class FusingLinker(StableHLOLinker):
        incompatible_rewrites = tuple(r for r in EXCLUDED_REWRITES if r != "fusion")

    fusing = Mode(linker=FusingLinker(), optimizer="fast_run")
    f = pytensor.function([x, y], out, mode=fusing)
    assert any(isinstance(getattr(n.op, "scalar_op", None), ps.Composite) for n in f.maker.fgraph.apply_nodes)
    compare_with_py([x, y], [out], [np.linspace(-1, 1, 7), np.linspace(2, 3, 7)], modes=(fusing,))


def test_broadcast_static_one_against_dynamic_dims():
    x = pt.tensor3("x", shape=(1, None, 1))
    y = pt.tensor3("y", shape=(None, 1, None))
    compare_with_py([x, y], [x + y, x * y - 1], [np.ones((1, 3, 1)), np.arange(8.0).reshape(2, 1, 4)])
