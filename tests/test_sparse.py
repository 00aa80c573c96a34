"""Sparse constant times dense tensor (pytensor.sparse Dot, StructuredDot) against the Python mode."""

import numpy as np
import pytensor
import pytensor.sparse as ps
import pytensor.tensor as pt
import pytest
import scipy.sparse as sps

from lowering import UnsupportedOpsError, UnsupportedTypeError
from tests.helpers import PY_MODE, RAW_MODE, compare_with_py


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


def test_scaled_product_subtracted_stays_a_product_where_pytensor_has_blas():
    """`z - a * dot(s, y)` is PyTensor's Usmm pattern (a C Op), taken only where PyTensor
    found a BLAS: the mode leaves that rewrite out, on any machine."""
    matrix = sps.random(6, 4, density=0.4, format="csr", random_state=1)
    y, z, a = pt.matrix("y"), pt.matrix("z"), pt.scalar("a")
    rng = np.random.default_rng(0)
    values = [rng.normal(size=(4, 2)), rng.normal(size=(6, 2)), np.float64(1.5)]
    with pytensor.config.change_flags(blas__ldflags="-lblas"):
        compare_with_py([y, z, a], [z - a * ps.dot(ps.as_sparse_variable(matrix), y)], values)


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


def test_dense_operand_of_the_wrong_size_raises_like_scipy():
    """The gather of the dense rows would clamp an index past the end: a wrong answer."""
    s = ps.as_sparse_variable(sps.csr_matrix(np.array([[1.0, 0, 2], [0, 3, 4]])))  # 2 x 3
    m, v = pt.matrix("m"), pt.vector("v")
    fixed = pt.tensor("fixed", shape=(2, 2))  # static, still a call-time error in both modes
    dot, structured = "matmul: dimension mismatch", "shape mismatch in StructuredDot.perform"
    cases = [
        (m, ps.dot(s, m), [(2, 2), (4, 2)], (3, 2), dot), (v, ps.dot(s, v), [(2,), (5,)], (3,), dot),
        (m, ps.dot(m, s), [(3, 1), (3, 3)], (3, 2), dot), (v, ps.dot(v, s), [(3,)], (2,), dot),
        (m, ps.structured_dot(s, m), [(2, 2), (4, 2)], (3, 2), structured),
        (fixed, ps.dot(s, fixed), [(2, 2)], None, dot),
    ]
    for x, out, wrong, right, message in cases:
        for mode in (PY_MODE, "STABLEHLO", RAW_MODE):
            fn = pytensor.function([x], out, mode=mode)
            for shape in wrong:
                with pytest.raises(ValueError, match=message):
                    fn(np.ones(shape))
        if right is not None:
            compare_with_py([x], [out], [np.arange(np.prod(right), dtype=float).reshape(right)])
    fn = pytensor.function([m], ps.dot(s, m), mode="STABLEHLO")
    with pytest.raises(ValueError, match=r"needs a matrix with 3 rows \(node: SparseDot\(SparseConstant"):
        fn(np.ones((2, 2)))


def test_sparse_outputs_are_refused_by_name():
    s = ps.as_sparse_variable(sps.csr_matrix(np.array([[1.0, 0, 2], [0, 3, 4]])))
    v = pt.vector("v")
    for mode in ("STABLEHLO", RAW_MODE):
        with pytest.raises(UnsupportedTypeError, match=r"output 1 \(.*\): sparse results are not supported"):
            pytensor.function([v], [v * 2, s.T], mode=mode)
        # (the raw graph's Ops that compute -s and s * 2 have no rule: that error comes first)
        for out in (s, s.T, -s, ps.mul(s, 2.0)) if mode == "STABLEHLO" else (s, s.T):
            with pytest.raises(UnsupportedTypeError, match=r"output 0 \(DeepCopyOp\(.*\)\): sparse results"):
                pytensor.function([], out, mode=mode)
