"""Sparse constant times dense tensor (pytensor.sparse Dot, StructuredDot) against the Python mode."""

import numpy as np
import pytensor
import pytensor.sparse as ps
import pytensor.tensor as pt
import pytest
import scipy.sparse as sps

from lowering import UnsupportedOpsError, UnsupportedTypeError
from tests.helpers import compare_with_py


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sparse_constant_products_and_gradients(dtype, fmt):
    rng = np.random.default_rng(0)
    matrix = sps.random(6, 4, density=0.4, format=fmt, random_state=1, dtype=dtype)
    s = ps.as_sparse_variable(matrix)
    x, y = pt.matrix("x", dtype=dtype), pt.matrix("y", dtype=dtype)
    values = [rng.normal(size=(3, 6)).astype(dtype), rng.normal(size=(4, 2)).astype(dtype)]
    outputs = [
        ps.structured_dot(s, y), ps.dot(s, y), ps.dot(x, s),
        pytensor.grad((ps.dot(s, y) ** 2).sum(), y), pytensor.grad((ps.dot(x, s) ** 2).sum(), x),
    ]
    compare_with_py([x, y], outputs, values)


def test_empty_and_all_zero_sparse_constants():
    y = pt.matrix("y")
    for matrix in (sps.csr_matrix((5, 3)), sps.csr_matrix((0, 3))):
        compare_with_py([y], [ps.dot(ps.as_sparse_variable(matrix), y)], [np.ones((3, 2))])


def test_sparse_inputs_are_refused_by_name():
    """When the function is built, not when a call hands the runtime a scipy matrix."""
    s, y = ps.csr_matrix("s"), pt.matrix("y")
    for out in (ps.structured_dot(s, y), s, s.T):  # (s alone: a DeepCopyOp of it)
        with pytest.raises(UnsupportedTypeError, match=r"input 0 \(s\): sparse values passed"):
            pytensor.function([s, y], out, mode="STABLEHLO", on_unused_input="ignore")
    with pytest.raises(UnsupportedOpsError, match="SparseFromDense"):
        pytensor.function([y], ps.csr_from_dense(y), mode="STABLEHLO")
