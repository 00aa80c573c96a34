"""nlinalg/slinalg Ops (LAPACK custom calls, triangular_solve) against the Python mode.

Decompositions that are unique only up to sign or phase (SVD, eigenvectors, QR) are
compared through what is unique: values, reconstructions, |columns| up to phase.
"""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy.linalg import block_diag
from pytensor.graph.fg import FunctionGraph
from pytensor.tensor import nlinalg as nl
from pytensor.tensor import slinalg as sl
from pytensor.tensor._linalg.solve import linear_control
from pytensor.tensor._linalg.solve import tridiagonal as tri
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.type_other import NoneConst

from lowering import LoweringOptions, UnsupportedParameterError, lower
from tests.helpers import MODE, PLATFORM, PY_MODE, TOLERANCES, compare_each_with_py, compare_with_py

FLOATS = ["float32", "float64", "complex64", "complex128"]
# What cuSOLVER lacks (Schur, pivoted QR) or runs on the host (QZ) lowers for the CPU
# only; `test_lowering_for_cuda_refuses_what_cusolver_lacks` checks the refusal.
LAPACK_ONLY = pytest.mark.skipif(PLATFORM != "cpu", reason="no cuSOLVER routine: lowered for the CPU only")
# Results of a factorization are as accurate as the matrix's conditioning allows.
LOOSE = {
    "float32": dict(rtol=2e-4, atol=2e-5), "complex64": dict(rtol=2e-4, atol=2e-5),
    "float64": dict(rtol=1e-9, atol=1e-11), "complex128": dict(rtol=1e-9, atol=1e-11),
}


def _general(rng, shape, dtype):
    a = rng.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.normal(size=shape)
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        a = a + shape[-1] * np.eye(shape[-1])
    return a.astype(dtype)


def _spd(rng, shape, dtype):
    a = _general(rng, shape, dtype)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _tensor(name, value, static=False):
    return pt.tensor(name, dtype=value.dtype.name, shape=value.shape if static else (None,) * value.ndim)


# Static shapes take other paths: triangular systems of up to 8 unknowns are solved by
# substitution written out (`_substitution`), reductions of up to 7 elements unrolled.
STATIC = pytest.mark.parametrize("static", [False, True], ids=["run-time", "static"])


def _same_up_to_phase(got, expected, tol, axis=-2):
    """Columns (axis=-2) or rows (axis=-1) equal up to a unit factor each."""
    inner = np.sum(np.conj(expected) * got, axis=axis, keepdims=True)
    phase = inner / np.abs(inner)
    np.testing.assert_allclose(got, expected * phase, **tol)


# --- Cholesky and the solves ------------------------------------------------------


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("dtype", FLOATS)
def test_cholesky(dtype, lower):
    rng = np.random.default_rng(0)
    a = _spd(rng, (5, 5), dtype)
    x = _tensor("x", a)
    compare_with_py([x], [sl.cholesky(x, lower=lower)], [a], **LOOSE[dtype])


def test_cholesky_of_an_indefinite_matrix_is_nan_per_batch_entry():
    # PyTensor's perform fills NaN when potrf fails; a batch keeps its good entries.
    x = pt.tensor3("x")
    values = np.stack([np.eye(3) * 4, -np.eye(3), np.eye(3)])
    [got] = compare_with_py([x], [sl.cholesky(x)], [values])
    assert np.isnan(got[1]).all() and not np.isnan(got[[0, 2]]).any()


@STATIC
@pytest.mark.parametrize("b_ndim", [1, 2])
@pytest.mark.parametrize("unit_diagonal", [False, True])
@pytest.mark.parametrize("trans", [0, 1, 2])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("dtype", FLOATS)
def test_solve_triangular(dtype, lower, trans, unit_diagonal, b_ndim, static):
    rng = np.random.default_rng(1)
    a = _general(rng, (4, 4), dtype)
    b = _general(rng, (4, 3)[:b_ndim], dtype)
    x, y = _tensor("a", a, static), _tensor("b", b, static)
    out = sl.solve_triangular(x, y, lower=lower, trans=trans, unit_diagonal=unit_diagonal, b_ndim=b_ndim)
    compare_with_py([x, y], [out], [a, b], **LOOSE[dtype])


@pytest.mark.parametrize("n", [1, 2, 8, 9])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_solve_triangular_of_static_sizes_batched(dtype, n):
    """Up to 8 unknowns by substitution written out, 9 by trsm: both lower and upper, a
    transpose, over a batch of 5 (Blockwise), against scipy."""
    rng = np.random.default_rng(n)
    a = _general(rng, (5, n, n), dtype) + 2 * n * np.eye(n, dtype=dtype)
    b = _general(rng, (5, n, 7), dtype)
    x, y = _tensor("a", a, static=True), _tensor("b", b, static=True)
    outs = [sl.solve_triangular(x, y, lower=True), sl.solve_triangular(x, y, lower=False, trans=1),
            sl.solve_triangular(x, y[..., 0], lower=True, trans=2, b_ndim=1)]
    compare_with_py([x, y], outs, [a, b], **LOOSE[dtype])


@STATIC
def test_solve_triangular_with_a_zero_on_the_diagonal_is_nan(static):
    shape = (3, 3) if static else (None, None)
    a, b = pt.tensor("a", shape=shape), pt.tensor("b", shape=shape)
    [got] = compare_with_py([a, b], [sl.solve_triangular(a, b)], [np.triu(np.ones((3, 3))) - np.eye(3), np.eye(3)])
    assert np.isnan(got).all()


@STATIC
@pytest.mark.parametrize("b_ndim", [1, 2])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("assume_a", ["gen", "sym", "her", "pos", "tridiagonal", "banded"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_solve(dtype, assume_a, lower, b_ndim, static):
    rng = np.random.default_rng(2)
    # sym/her/pos read one triangle only: the other holds noise that must be ignored.
    a = _spd(rng, (5, 5), dtype)
    noise = _general(rng, (5, 5), dtype)
    strict_lower = np.tri(5, k=-1, dtype=bool)
    a = np.where(strict_lower.T if lower else strict_lower, noise, a)
    if assume_a in ("gen", "banded"):
        a = _general(rng, (5, 5), dtype)
    b = _general(rng, (5, 2)[:b_ndim], dtype)
    x, y = _tensor("a", a, static), _tensor("b", b, static)
    out = sl.solve(x, y, assume_a=assume_a, lower=lower, b_ndim=b_ndim)
    compare_with_py([x, y], [out], [a, b], **LOOSE[dtype])


@pytest.mark.parametrize("assume_a", ["gen", "pos"])
def test_solve_fails_to_nan(assume_a):
    # scipy raises LinAlgError (singular, not positive definite); PyTensor's perform
    # catches it and returns NaN.
    a, b = pt.matrix("a"), pt.matrix("b")
    fn = pytensor.function([a, b], sl.solve(a, b, assume_a=assume_a), mode=MODE)
    assert np.isnan(fn(np.ones((3, 3)), np.eye(3))).all()
    np.testing.assert_allclose(fn(np.eye(3) * 2, np.eye(3)), np.eye(3) / 2)


@STATIC
@pytest.mark.parametrize("b_ndim", [1, 2])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("dtype", FLOATS)
def test_cho_solve(dtype, lower, b_ndim, static):
    rng = np.random.default_rng(3)
    factor = np.linalg.cholesky(_spd(rng, (4, 4), dtype))
    if not lower:
        factor = np.conj(factor.T)
    factor = factor + np.triu(_general(rng, (4, 4), dtype), 1) * (1 if lower else 0)  # ignored triangle
    b = _general(rng, (4, 3)[:b_ndim], dtype)
    c, y = _tensor("c", factor.astype(dtype), static), _tensor("b", b, static)
    out = sl.cho_solve((c, lower), y, b_ndim=b_ndim)
    compare_with_py([c, y], [out], [factor.astype(dtype), b], **LOOSE[dtype])


# --- inverse and determinants -----------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_inverse_and_determinants(dtype):
    rng = np.random.default_rng(4)
    a = _general(rng, (5, 5), dtype)
    a[[0, 3]] = a[[3, 0]]  # an odd permutation for the determinant's sign
    x = _tensor("x", a)
    outputs = [nl.matrix_inverse(x), nl.det(x), *Blockwise(nl.SLogDet())(x)]
    if dtype.startswith("complex"):
        # PyTensor declares SLogDet's log|det| complex (numpy's is real): compare values.
        got = pytensor.function([x], outputs, mode=MODE)(a)
        expected = [np.linalg.inv(a), np.linalg.det(a), *np.linalg.slogdet(a)]
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, **LOOSE[dtype])
    else:
        compare_with_py([x], outputs, [a], **LOOSE[dtype])


@pytest.mark.parametrize("bad", [np.nan, -np.inf])
def test_non_finite_matrices_raise_as_perform_does(bad):
    """scipy's check_finite (`lu`, `eigvalsh` and its gradient) and numpy's (`eig`) raise
    before LAPACK runs, for a NaN or an infinity anywhere: here in the triangle eigvalsh
    does not read, and in one entry of a Scan. The finite matrices still work."""
    good = np.array([[2.0, 0.5, 0.1], [0.5, 3.0, 0.2], [0.1, 0.2, 4.0]])
    a = good.copy()
    a[0, 2] = bad  # eigvalsh(lower=True) reads the lower triangle
    x, y, t = pt.dmatrix("x"), pt.dmatrix("y"), pt.tensor3("t")
    check = (ValueError, "array must not contain infs or NaNs")
    cases = [
        ([x], sl.lu(x)[2], *check),
        ([x], sl.eigvalsh(x, NoneConst), *check),
        ([x, y], sl.eigvalsh(x, y), *check),
        ([x, y], pytensor.grad(sl.eigvalsh(x, y).sum(), x), *check),
        ([x], nl.eig(x)[0], np.linalg.LinAlgError, "Array must not contain infs or NaNs"),
        ([t], pytensor.scan(lambda m: sl.lu(m)[2], sequences=[t], return_updates=False), *check),
    ]
    for inputs, out, error, message in cases:
        matrices = [np.stack([good, a])] if inputs == [t] else [a, np.eye(3)][:len(inputs)]
        for mode in (PY_MODE, MODE):
            with pytest.raises(error, match=message):
                pytensor.function(inputs, out, mode=mode)(*matrices)
        finite = [np.stack([good, good])] if inputs == [t] else [good, np.eye(3)][:len(inputs)]
        compare_with_py(inputs, [out], finite, rtol=1e-10, atol=1e-12)


def test_singular_matrix():
    x = pt.matrix("x")
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    got = compare_with_py([x], [nl.det(x), *Blockwise(nl.SLogDet())(x)], [singular])
    assert got[0] == 0 and got[1] == 0 and got[2] == -np.inf
    fn = pytensor.function([x], nl.matrix_inverse(x), mode=MODE)
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        fn(singular)  # as numpy.linalg.inv, which PyTensor's perform calls
    np.testing.assert_allclose(fn(np.eye(2) * 4), np.eye(2) / 4)  # and the function still works


def test_singular_matrix_inside_scan_raises_too():
    t = pt.tensor3("t")
    out = pytensor.scan(nl.matrix_inverse, sequences=[t], return_updates=False)
    fn = pytensor.function([t], out, mode=MODE)
    np.testing.assert_allclose(fn(np.stack([np.eye(2) * 2, np.eye(2)])), np.stack([np.eye(2) / 2, np.eye(2)]))
    with pytest.raises(np.linalg.LinAlgError):
        fn(np.stack([np.eye(2), np.ones((2, 2))]))


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8"])
def test_integer_matrices_are_factored_in_floating_point(dtype):
    rng = np.random.default_rng(5)
    a = (np.round(rng.normal(size=(4, 4)) * 3) + 8 * np.eye(4)).astype(dtype)
    s = (a.astype(np.int64) @ a.T.astype(np.int64)).astype(dtype) if dtype != "int8" else np.diag([4, 5, 6, 7]).astype(dtype)
    x, y = _tensor("x", a), _tensor("s", s)
    outputs = [nl.matrix_inverse(x), nl.det(x), sl.cholesky(y), sl.solve(x, y), nl.eigh(y)[0], nl.pinv(x)]
    compare_with_py([x, y], outputs, [a, s], rtol=1e-5, atol=1e-6)


# --- LU -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_lu_factorizations(dtype):
    rng = np.random.default_rng(6)
    a = _general(rng, (5, 5), dtype) - 5 * np.eye(5).astype(dtype)  # pivoting happens
    x = _tensor("x", a)
    lu_factor, pivots = sl.lu_factor(x)
    outputs = [
        *sl.lu(x), *sl.lu(x, p_indices=True), *sl.lu(x, permute_l=True), lu_factor, pivots,
        sl.pivot_to_permutation(pivots), sl.pivot_to_permutation(pivots, inverse=True),
    ]
    compare_with_py([x], outputs, [a], **LOOSE[dtype])


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (2, 3, 4)])
def test_lu_of_a_rectangular_matrix(shape):
    # scipy.linalg.lu of m x n: P is m x m, L m x min(m, n), U min(m, n) x n.
    a = np.random.default_rng(7).normal(size=shape)
    x = _tensor("x", a)
    outputs = [*sl.lu(x), *sl.lu(x, p_indices=True), *sl.lu(x, permute_l=True), *sl.lu_factor(x)]
    compare_with_py([x], outputs, [a], **LOOSE["float64"])


def test_lu_factor_of_a_singular_matrix_is_nan():
    x = pt.matrix("x")
    lu, _ = compare_with_py([x], list(sl.lu_factor(x)), [np.ones((3, 3))])
    assert np.isnan(lu).all()


# --- QR, SVD, eigen ---------------------------------------------------------------


@pytest.mark.parametrize("pivoting", [False, pytest.param(True, marks=LAPACK_ONLY)])
@pytest.mark.parametrize("mode", ["full", "economic", "r", "raw"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])  # PyTensor types complex QR as real
def test_qr(dtype, shape, mode, pivoting):
    a = _general(np.random.default_rng(7), shape, dtype)
    x = _tensor("x", a)
    outputs = sl.qr(x, mode=mode, pivoting=pivoting)
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    compare_with_py([x], outputs, [a], **LOOSE[dtype])


@pytest.mark.parametrize("full_matrices", [True, False])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_svd(dtype, shape, full_matrices):
    a = _general(np.random.default_rng(8), shape, dtype)
    x = _tensor("x", a)
    u, s, vt = nl.svd(x, full_matrices=full_matrices)
    got = pytensor.function([x], [u, s, vt, nl.svd(x, compute_uv=False)], mode=MODE)(a)
    eu, es, evt = np.linalg.svd(a, full_matrices=full_matrices)
    tol = LOOSE[dtype]
    k = min(shape)
    for g, e in zip(got, [eu, es, evt, es]):
        assert g.shape == e.shape
    np.testing.assert_allclose(got[1], es.astype(got[1].dtype), **tol)
    np.testing.assert_allclose(got[3], got[1], **tol)
    _same_up_to_phase(got[0][:, :k], eu[:, :k], tol)
    np.testing.assert_allclose((got[0][:, :k] * got[1]) @ got[2][:k], a, **tol)
    # The full bases' extra vectors are unique only as a subspace: check orthonormality.
    np.testing.assert_allclose(np.conj(got[0].T) @ got[0], np.eye(got[0].shape[1]), **tol)
    np.testing.assert_allclose(got[2] @ np.conj(got[2].T), np.eye(got[2].shape[0]), **tol)


@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_eigh(dtype, uplo):
    rng = np.random.default_rng(9)
    a = _spd(rng, (5, 5), dtype)
    a = np.where(np.tri(5, dtype=bool) if uplo == "U" else np.tri(5, dtype=bool).T, a, rng.normal(size=(5, 5)))
    a = a.astype(dtype)
    x = _tensor("x", a)
    w, v = nl.eigh(x, UPLO=uplo)
    got_w, got_v = pytensor.function([x], [w, v], mode=MODE)(a)
    ew, ev = np.linalg.eigh(a, UPLO=uplo)
    assert got_w.dtype == ew.dtype and got_v.dtype == ev.dtype
    np.testing.assert_allclose(got_w, ew, **LOOSE[dtype])
    _same_up_to_phase(got_v, ev, LOOSE[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])  # PyTensor types complex eigenvalues as complex
def test_eigvalsh_standard_and_generalized(dtype):
    rng = np.random.default_rng(10)
    a, b = _spd(rng, (4, 4), dtype), _spd(rng, (4, 4), dtype)
    x, y = _tensor("a", a), _tensor("b", b)
    for use_lower in (True, False):
        outputs = [sl.eigvalsh(x, NoneConst, lower=use_lower), sl.eigvalsh(x, y, lower=use_lower)]
        compare_with_py([x, y], outputs, [a, b], **LOOSE[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_eig(dtype):
    a = _general(np.random.default_rng(11), (5, 5), dtype) - 5 * np.eye(5).astype(dtype)
    x = _tensor("x", a)
    w, v = pytensor.function([x], list(nl.eig(x)), mode=MODE)(a)
    ew, ev = pytensor.function([x], list(nl.eig(x)), mode=PY_MODE)(a)
    assert w.dtype == ew.dtype and v.dtype == ev.dtype
    tol = LOOSE[dtype]
    # Conjugate pairs may come in either order: sort by (real part, rounded; imaginary part).
    order = np.lexsort((w.imag, np.round(w.real, 4)))
    expected_order = np.lexsort((ew.imag, np.round(ew.real, 4)))
    np.testing.assert_allclose(w[order], ew[expected_order], **tol)
    _same_up_to_phase(v[:, order], ev[:, expected_order], tol)


@pytest.mark.parametrize("shape, hermitian", [((5, 3), False), ((3, 5), False), ((4, 4), False), ((4, 4), True)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_pinv(dtype, shape, hermitian):
    rng = np.random.default_rng(12)
    if hermitian:
        # Rank 2 in double precision: the other eigenvalues are rounding noise, dropped by
        # the cutoff. In single precision that noise is above the cutoff: full rank there.
        low_rank = _general(rng, (4, 2 if dtype in ("float64", "complex128") else 4), dtype)
        a = (low_rank @ np.conj(low_rank.T)).astype(dtype)
    else:
        a = _general(rng, shape, dtype)
    x = _tensor("x", a)
    compare_with_py([x], [nl.pinv(x, hermitian=hermitian)], [a], rtol=1e-3 if dtype in ("float32", "complex64") else 1e-8,
                    atol=1e-4 if dtype in ("float32", "complex64") else 1e-10)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "complex128"])
def test_block_diag(dtype):
    rng = np.random.default_rng(13)
    blocks = [(rng.normal(size=s) * 3).astype(dtype) for s in [(2, 3), (1, 1), (3, 2)]]
    xs = [_tensor(f"b{i}", b) for i, b in enumerate(blocks)]
    compare_with_py(xs, [sl.block_diag(*xs)], blocks)


def test_kronecker_product():
    x, y = pt.matrix("x"), pt.matrix("y")
    rng = np.random.default_rng(14)
    compare_with_py([x, y], [nl.kron(x, y)], [rng.normal(size=(2, 3)), rng.normal(size=(3, 2))])


# --- least squares, tridiagonal LU --------------------------------------------------


def _lstsq_function():
    a, b, rcond = pt.matrix("a"), pt.matrix("b"), pt.dscalar("rcond")
    return pytensor.function([a, b, rcond], nl.lstsq(a, b, rcond), mode=MODE)


def _expected_lstsq(a, b, rcond):
    """numpy's results in the types PyTensor declares: float64, rank int32, and x a
    matrix (one column for a 1-d b, where numpy returns a vector)."""
    x, residuals, rank, s = np.linalg.lstsq(a, b, rcond)
    return [(x if x.ndim == 2 else x[:, None]).astype(np.float64), residuals.astype(np.float64), np.int32(rank),
            s.astype(np.float64)]


def _rank_deficient(rng, shape, rank):
    return rng.normal(size=(shape[0], rank)) @ rng.normal(size=(rank, shape[1]))


def test_lstsq_matches_the_python_mode():
    rng = np.random.default_rng(30)
    a, b, rcond = pt.matrix("a"), pt.matrix("b"), pt.dscalar("rcond")
    values = [rng.normal(size=(6, 3)), _rank_deficient(rng, (5, 5), 3)]  # 2 residuals, none
    compare_each_with_py([a, b, rcond], list(nl.lstsq(a, b, rcond)),
                         [[value, rng.normal(size=(len(value), 2)), -1.0] for value in values], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype, b_ndim", [("float32", 2), ("float64", 1)])
def test_lstsq_dtypes_and_a_vector_b(dtype, b_ndim):
    # numpy computes in double and rounds to float32 when a and b both are; PyTensor
    # declares float64 results and a matrix x. One function, so the residuals' length
    # (measured at run time) changes between calls.
    rng = np.random.default_rng(31)
    a, b, rcond = pt.matrix("a", dtype=dtype), pt.tensor("b", dtype=dtype, shape=(None,) * b_ndim), pt.dscalar("r")
    fn = pytensor.function([a, b, rcond], nl.lstsq(a, b, rcond), mode=MODE)
    tol = dict(rtol=1e-6, atol=1e-7) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    for value in [rng.normal(size=(6, 3)), _rank_deficient(rng, (6, 3), 2), rng.normal(size=(3, 5))]:
        rhs = rng.normal(size=(len(value), 2)[:b_ndim])
        value, rhs = value.astype(dtype), rhs.astype(dtype)
        got, expected = fn(value, rhs, -1.0), _expected_lstsq(value, rhs, -1.0)
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype and g.shape == e.shape
            np.testing.assert_allclose(g, e, **tol)


def test_lstsq_rcond_and_an_ill_conditioned_matrix():
    # Singular values from 1 to 1e-20: the rank is what gelsd's cutoff keeps,
    # s > r * max(s) with r = rcond inside (0, 1), LAPACK's 2^-53 otherwise.
    rng = np.random.default_rng(32)
    u, _ = np.linalg.qr(rng.normal(size=(10, 8)))
    v, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    a = (u * np.logspace(0, -20, 8)) @ v.T
    rhs = rng.normal(size=(10, 2))
    fn = _lstsq_function()
    for rcond in [1e-7, 1e-12, -1.0, 2.0]:
        got, expected = fn(a, rhs, rcond), _expected_lstsq(a, rhs, rcond)
        assert got[2] == expected[2], rcond
        np.testing.assert_allclose(got[3], expected[3], rtol=1e-9, atol=1e-15)
        # x is as accurate as the kept singular values' spread allows (nothing, for
        # the last two: the rank is what they check).
        kept = expected[3][expected[3] > expected[3][0] * (rcond if 0 < rcond < 1 else 2.0**-53)]
        scale = np.abs(expected[0]).max()
        np.testing.assert_allclose(got[0] / scale, expected[0] / scale, atol=1e-15 * kept[0] / kept[-1] * 10)
    # At the cutoffs: s <= r * max(s) is dropped; rcond 0 keeps 1.5e-16 > 2^-53 (numpy's
    # eps, 2^-52, would not).
    diagonal = np.diag([1.0, 0.5, 1.5e-16])
    for rcond, rank in [(0.5, 1), (0.0, 3)]:
        got = fn(diagonal, np.ones((3, 1)), rcond)
        assert got[2] == rank == np.linalg.lstsq(diagonal, np.ones((3, 1)), rcond)[2]


def test_lstsq_failures_and_empty_shapes():
    fn = _lstsq_function()
    a = np.random.default_rng(33).normal(size=(4, 3))
    with pytest.raises(np.linalg.LinAlgError, match="SVD did not converge in Linear Least Squares"):
        fn(np.where(np.eye(4, 3) > 0, np.nan, a), np.ones((4, 2)), -1.0)  # as numpy: gelsd fails
    with pytest.raises(np.linalg.LinAlgError, match="Incompatible dimensions"):
        fn(a, np.ones((3, 2)), -1.0)
    rhs = np.ones((4, 2))
    rhs[1, 1] = np.inf  # a non-finite b is no error: NaN in its column, as numpy
    for shapes in [((4, 3), rhs), ((0, 3), np.ones((0, 2))), ((3, 0), np.ones((3, 2))), ((4, 3), np.ones((4, 0)))]:
        value = a[:shapes[0][0], :shapes[0][1]]
        got, expected = fn(value, shapes[1], -1.0), _expected_lstsq(value, shapes[1], -1.0)
        for g, e in zip(got, expected):
            assert g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14, equal_nan=True)


def _tridiagonal(rng, shape, dtype):
    a = rng.normal(size=shape) * 3
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.normal(size=shape)
    return np.triu(np.tril(a, 1), -1).astype(dtype)


@pytest.mark.parametrize("static", [False, True])
@pytest.mark.parametrize("dtype", FLOATS)
def test_tridiagonal_lu_factor_and_solve(dtype, static):
    # Random diagonals: rows swap wherever |dl[i]| > |d[i]|, so ipiv has both kinds;
    # factors and pivots are compared entry by entry with scipy's gttrf.
    rng = np.random.default_rng(34)
    a = _tridiagonal(rng, (3, 7, 7), dtype)
    b = _general(rng, (3, 7, 2), dtype)
    x = pt.tensor3("a", dtype=dtype, shape=a.shape if static else (None,) * 3)
    y = pt.tensor3("b", dtype=dtype, shape=b.shape if static else (None,) * 3)
    factors = tri.tridiagonal_lu_factor(x)
    outputs = [*factors, *(tri.tridiagonal_lu_solve(factors, y, b_ndim=2, transposed=t) for t in (False, True))]
    got = compare_with_py([x, y], outputs, [a, b], **LOOSE[dtype], modes=(MODE,))
    pivots = got[4]
    assert (pivots != np.arange(1, 8)).any() and (pivots == np.arange(1, 8)).any()
    np.testing.assert_allclose(got[5], np.linalg.solve(a, b), **LOOSE[dtype])
    np.testing.assert_allclose(got[6], np.linalg.solve(np.swapaxes(a, -1, -2), b), **LOOSE[dtype])


def test_tridiagonal_lu_of_a_singular_matrix_and_small_orders():
    # A zero pivot (LAPACK's info > 0) is no error in PyTensor's perform: the factors
    # as LAPACK leaves them, and the solve divides by zero.
    dl, d, du = pt.vector("dl"), pt.vector("d"), pt.vector("du")
    factors = tri.LUFactorTridiagonal()(dl, d, du)
    got = compare_with_py([dl, d, du], factors, [np.zeros(3), np.array([0.0, 1.0, 0.0, 2.0]), np.ones(3)])
    inputs = [pt.vector(n) for n in ("l", "c", "u", "u2")] + [pt.vector("p", dtype="int32"), pt.vector("b")]
    solves = [tri.SolveLUFactorTridiagonal(b_ndim=1, transposed=t)(*inputs) for t in (False, True)]
    solved = compare_with_py(inputs, solves, [*got, np.ones(4)])
    assert not np.isfinite(solved[0]).all() and not np.isfinite(solved[1]).all()
    # scipy's wrapper refuses n <= 2 (an f2py size check); LAPACK's answer for them.
    fn = pytensor.function([dl, d, du], factors, mode=MODE)
    for values, expected in [
        ((np.array([2.0]), np.array([1.0, 2.0]), np.array([1.0])), ([0.5], [2, 0], [2], [], [2, 2])),
        ((np.zeros(0), np.array([3.0]), np.zeros(0)), ([], [3], [], [], [1])),
        ((np.zeros(0), np.zeros(0), np.zeros(0)), ([], [], [], [], [])),
    ]:
        for g, e in zip(fn(*values), expected, strict=True):
            np.testing.assert_array_equal(g, e)


# --- batches, empty and dynamic shapes, conditioning --------------------------------


def test_blockwise_batches_broadcast():
    rng = np.random.default_rng(15)
    a = _general(rng, (4, 3, 3), "float64")
    b = rng.normal(size=(1, 3, 2))
    s = _spd(rng, (2, 1, 3, 3), "float64")
    x, y, z = pt.tensor3("a"), pt.tensor("b", shape=(1, None, None)), pt.tensor("s", shape=(None, 1, None, None))
    outputs = [
        sl.solve(x, y), sl.solve_triangular(x, y, lower=True), nl.det(x), nl.matrix_inverse(x),
        *sl.lu(x), *sl.lu_factor(x), *sl.qr(x), nl.svd(x, compute_uv=False), nl.pinv(x),
        sl.cholesky(z), sl.cho_solve((sl.cholesky(z), True), y), sl.solve(z, x, assume_a="pos"),
        Blockwise(nl.Eigh())(z)[0], *Blockwise(nl.SLogDet())(x),
    ]
    compare_with_py([x, y, z], outputs, [a, b, s])


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_numpy_linalg_ops_compute_in_double(dtype):
    """numpy.linalg computes in double whatever the input and rounds the result; float32
    LAPACK left det, inv and pinv of an ill-conditioned float32 matrix (Hilbert's, 6 x 6,
    condition 1.5e7) 0.5-1% off the Python mode's."""
    from scipy.linalg import hilbert

    x = pt.matrix("x", dtype=dtype)
    sign, log_abs = Blockwise(nl.SLogDet())(x)
    # (PyTensor types a complex matrix's log|det| and singular values complex: real parts)
    outputs = [nl.det(x), nl.matrix_inverse(x), nl.pinv(x), sign, pt.real(log_abs),
               pt.real(nl.svd(x, compute_uv=False)), pt.sort(pt.real(nl.eig(x)[0])), nl.tensorinv(x, ind=1)]
    if dtype == "float32":  # (PyTensor types a complex matrix's eigenvectors real: refused)
        outputs.append(nl.eigh(x)[0])
    value = (hilbert(6) * (1 + 0.5j if dtype == "complex64" else 1)).astype(dtype)
    compare_with_py([x], outputs, [value], rtol=2e-6, atol=0)


@pytest.mark.parametrize("solve", ["cho_solve", "solve_triangular", "solve_pos", "lu_solve", "solve_gen"])
def test_batch_sizes_known_at_run_time_only_are_checked(solve):
    """A batched LAPACK call checks no shapes: a batch of 3 matrices against 2 (or 1)
    right-hand sides read past the shorter one and returned garbage. Now numpy's
    ValueError, as perform's (the Python mode: "shape mismatch", "Runtime broadcasting
    not allowed"), before anything runs where the sizes cannot broadcast."""
    a, b = pt.tensor3("a"), pt.tensor3("b")
    x = {
        "cho_solve": lambda: sl.cho_solve((a, True), b, b_ndim=2),
        "solve_triangular": lambda: sl.solve_triangular(a, b, lower=True, b_ndim=2),
        "solve_pos": lambda: sl.solve(a, b, assume_a="pos", b_ndim=2),
        "lu_solve": lambda: sl.lu_solve(sl.lu_factor(a), b, b_ndim=2),
        "solve_gen": lambda: sl.solve(a, b, b_ndim=2),
    }[solve]()
    f = pytensor.function([a, b], x, mode=MODE)
    py = pytensor.function([a, b], x, mode=PY_MODE)
    matrices = np.stack([np.eye(2) * (i + 2) for i in range(3)])
    rhs = np.stack([np.ones((2, 1)) * (i + 1) for i in range(3)])
    for batch_a, batch_b in [(3, 2), (3, 1), (1, 3), (2, 3)]:
        with pytest.raises(ValueError):
            py(matrices[:batch_a], rhs[:batch_b])
        with pytest.raises(ValueError):
            f(matrices[:batch_a], rhs[:batch_b])
    np.testing.assert_allclose(f(matrices, rhs), py(matrices, rhs))


EMPTY_CASES = {
    "cholesky": lambda x: [sl.cholesky(x)],
    "inverse": lambda x: [nl.matrix_inverse(x)],
    "det": lambda x: [nl.det(x)],
    "slogdet": lambda x: list(Blockwise(nl.SLogDet())(x)),
    "eigh": lambda x: list(Blockwise(nl.Eigh())(x)),
    "eig": lambda x: list(nl.eig(x)),
    "lu": lambda x: list(sl.lu(x)) + list(sl.lu_factor(x)),
    "solve": lambda x: [sl.solve(x, x), sl.solve(x, x, assume_a="pos"), sl.solve_triangular(x, x)],
    "qr": lambda x: list(sl.qr(x)),
    "svd": lambda x: list(nl.svd(x)) + [nl.svd(x, compute_uv=False)],
    "pinv": lambda x: [nl.pinv(x)],
}


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0)])
@pytest.mark.parametrize("case", sorted(EMPTY_CASES))
def test_empty_matrices(case, shape):
    # jaxlib's LAPACK handlers divide by the matrix size: empty operands must never reach them.
    x = pt.tensor("x", shape=(None,) * len(shape))
    compare_with_py([x], EMPTY_CASES[case](x), [np.zeros(shape)])


@pytest.mark.parametrize("shape", [(3, 0), (0, 3)])
def test_empty_rectangular_svd_and_qr_give_identity_bases(shape):
    x = pt.matrix("x")
    qr = [*sl.qr(x)] if shape[0] else []  # scipy's qr itself fails on (0, n)
    compare_with_py([x], [*nl.svd(x), nl.pinv(x), *qr], [np.zeros(shape)])


def test_dynamic_shapes_reuse_one_lowering():
    x, y = pt.matrix("x"), pt.matrix("y")
    fn = pytensor.function([x, y], [sl.cholesky(x), sl.solve(x, y), nl.det(x)], mode=MODE)
    rng = np.random.default_rng(16)
    for n in (1, 4, 9):
        s, b = _spd(rng, (n, n), "float64"), rng.normal(size=(n, 2))
        chol, solved, det = fn(s, b)
        np.testing.assert_allclose(chol, np.linalg.cholesky(s), **LOOSE["float64"])
        np.testing.assert_allclose(solved, np.linalg.solve(s, b), **LOOSE["float64"])
        np.testing.assert_allclose(det, np.linalg.det(s), **LOOSE["float64"])


def test_ill_conditioned_hilbert_matrix():
    # cond ~ 1e13: results agree with scipy's to the accuracy the conditioning allows.
    n = 10
    hilbert = 1.0 / (np.arange(n)[:, None] + np.arange(n) + 1)
    x, y = pt.matrix("x"), pt.matrix("y")
    b = np.eye(n)
    compare_with_py([x], [sl.cholesky(x), nl.det(x)], [hilbert], rtol=1e-6, atol=1e-9)
    got = pytensor.function([x, y], sl.solve(x, y, assume_a="pos"), mode=MODE)(hilbert, b)
    residual = np.linalg.norm(hilbert @ got - b) / np.linalg.norm(b)
    assert residual < 1e-3
    np.testing.assert_allclose(got, np.linalg.solve(hilbert, b), rtol=1e-2)


# --- gradients --------------------------------------------------------------------


def test_gradients_as_pytensor_builds_them():
    rng = np.random.default_rng(17)
    s = _spd(rng, (4, 4), "float64")
    a = _general(rng, (4, 4), "float64")
    b = rng.normal(size=(4, 2))
    x, y, z = pt.matrix("s"), pt.matrix("a"), pt.matrix("b")
    chol = sl.cholesky(x)
    logdet = 2 * pt.log(pt.diagonal(chol)).sum()
    quad = (sl.solve_triangular(chol, z, lower=True) ** 2).sum()
    costs = [
        logdet + quad,
        nl.det(y) + nl.matrix_inverse(y).sum(),
        sl.solve(y, z).sum() + sl.solve(x, z, assume_a="pos").sum(),
        nl.eigh(x)[0].sum() + (nl.eigh(x)[1][:, 0] ** 2).sum() + sl.eigvalsh(x, x + y @ y.T).sum(),
        nl.svd(y, compute_uv=False).sum() + nl.pinv(y).sum(),
        sl.lu(y)[2].sum() + sl.lu_factor(y)[0].sum(),
        # PyTensor builds QR's gradient only for static shapes (an `ifelse` bug otherwise)
        sl.qr(pt.specify_shape(y, (4, 4)))[1].sum(),
    ]
    outputs = [g for cost in costs for g in pytensor.grad(cost, [x, y, z], disconnected_inputs="ignore")]
    compare_with_py([x, y, z], outputs, [s, a, b], rtol=1e-7, atol=1e-9, modes=(MODE,))


def test_pymc_mvnormal_logp_and_gradient():
    import pymc as pm

    rng = np.random.default_rng(18)
    observed = rng.normal(size=(20, 3))
    with pm.Model() as model:
        chol, _, _ = pm.LKJCholeskyCov("chol", n=3, eta=2.0, sd_dist=pm.Exponential.dist(1.0), compute_corr=True)
        mu = pm.Normal("mu", 0, 1, shape=3)
        pm.MvNormal("y", mu=mu, chol=chol, observed=observed)
    point = model.initial_point()
    expected = model.compile_logp(mode="FAST_COMPILE")(point), model.compile_dlogp(mode="FAST_COMPILE")(point)
    got = model.compile_logp(mode=MODE)(point), model.compile_dlogp(mode=MODE)(point)
    np.testing.assert_allclose(got[0], expected[0], **TOLERANCES["float64"])
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-9, atol=1e-10)


# --- expm, Schur, Sylvester and Lyapunov equations, tensor inverse/solve -------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_expm(dtype):
    # Norms from tiny (no squaring) to large (many): scaling and squaring per entry.
    rng = np.random.default_rng(19)
    x = pt.tensor("x", dtype=dtype, shape=(None, None, None))
    values = np.stack([_general(rng, (4, 4), dtype) * s / 4 for s in (1e-3, 0.5, 3, 40)]).astype(dtype)
    got = pytensor.function([x], sl.expm(x), mode=MODE)(values)
    expected = pytensor.function([x], sl.expm(x), mode=PY_MODE)(values)
    assert got.dtype == expected.dtype
    # Relative to each result's largest entry. At norm 40 scipy itself is off by 3e-12
    # (against mpmath) where this lowering is within 3e-15: the tolerance is scipy's.
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g / np.abs(e).max(), e / np.abs(e).max(),
                                   rtol=0, atol=5e-5 if dtype in ("float32", "complex64") else 1e-11)


def test_expm_of_empty_and_non_finite_matrices():
    x = pt.matrix("x")
    fn = pytensor.function([x], sl.expm(x), mode=MODE)
    assert fn(np.zeros((0, 0))).shape == (0, 0)
    assert np.isnan(fn(np.array([[np.inf, 0.0], [0.0, 1.0]]))).all()
    np.testing.assert_allclose(fn(np.zeros((3, 3))), np.eye(3))


@LAPACK_ONLY
@pytest.mark.parametrize("output", ["real", "complex"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_schur(dtype, output):
    a = _general(np.random.default_rng(20), (5, 5), dtype) - 5 * np.eye(5).astype(dtype)
    x = _tensor("x", a)
    compare_with_py([x], list(sl.schur(x, output=output)), [a], **LOOSE[dtype])


@LAPACK_ONLY
def test_schur_of_non_finite_input_is_nan():
    x = pt.matrix("x")
    for sort in (None, "lhp"):
        got = compare_with_py([x], list(sl.schur(x, sort=sort)), [np.array([[1.0, np.nan], [0.0, 1.0]])])
        assert all(np.isnan(g).all() for g in got)


def _schur_sort_cases(rng, dtype):
    """Random matrices (real ones have 2x2 blocks), one with eigenvalues 1e9 apart in
    scale, one with a nearly repeated pair, a triangular one, and eigenvalues on the
    imaginary axis (selected by 'rhp', not 'lhp', as numpy's x.real >= 0 says)."""
    n = 6
    q = np.linalg.qr(rng.normal(size=(n, n)))[0]
    cases = [
        _general(rng, (n, n), dtype) - n * np.eye(n),
        rng.normal(size=(n, n)) * 10.0 ** np.arange(-6, 0) * 4,
        q @ np.diag([0.5, 0.5 + 1e-9, -1.5, 2.5, -0.25, 1.5]) @ q.T,
        np.triu(rng.normal(size=(n, n))),
        block_diag([[0.0, 2.0], [-2.0, 0.0]], [[1.0, 1.0], [-3.0, 1.0]], [[-1.0, 0.5], [-2.0, -1.0]])
        + np.triu(np.full((n, n), 0.5), 2),
    ]
    return np.stack([c.astype(dtype) for c in cases])


# A sorted form is perform's own: the executable runs perform (scipy's gees, which
# reorders with trsen) on the host, so the values are equal to the bit.


@LAPACK_ONLY
@pytest.mark.parametrize("sort", ["lhp", "rhp", "iuc", "ouc"])
@pytest.mark.parametrize("output", ["real", "complex"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_schur_sort_is_gees_as_perform_calls_it(dtype, output, sort):
    # Batched: the host loops over the batch, as perform would for each entry.
    values = _schur_sort_cases(np.random.default_rng(23), dtype)
    x = _tensor("x", values)
    compare_with_py([x], list(sl.schur(x, output=output, sort=sort)), [values], rtol=0, atol=0)


@LAPACK_ONLY
@pytest.mark.parametrize("n", [0, 1, 2, 9])
def test_schur_sort_of_every_size(n):
    a = np.random.default_rng(n).normal(size=(n, n))
    x = pt.matrix("x")
    got = compare_with_py([x], list(sl.schur(x, sort="lhp")), [a], rtol=0, atol=0)
    assert all(g.shape == (n, n) for g in got)


@LAPACK_ONLY
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (1, 4)])
def test_solve_sylvester(shape):
    # Real Schur forms of random matrices have 2x2 blocks: TRSYL's paired columns.
    rng = np.random.default_rng(21)
    m, n = shape
    a, b, c = rng.normal(size=(m, m)), rng.normal(size=(n, n)) + 3 * np.eye(n), rng.normal(size=(m, n))
    x, y, z = pt.matrix("a"), pt.matrix("b"), pt.matrix("c")
    solved = linear_control.solve_sylvester(x, y, z)
    compare_with_py([x, y, z], [solved, *pytensor.grad(solved.sum(), [x, y, z])], [a, b, c],
                    rtol=1e-7, atol=1e-9, modes=(MODE,))


@LAPACK_ONLY
def test_batched_sylvester_pairs_columns_per_entry():
    rng = np.random.default_rng(22)
    a = rng.normal(size=(3, 4, 4))
    b = np.stack([np.diag([1.0, 2.0, 3.0]), rng.normal(size=(3, 3)), rng.normal(size=(3, 3))]) + 4 * np.eye(3)
    c = rng.normal(size=(3, 4, 3))
    x, y, z = pt.tensor3("a"), pt.tensor3("b"), pt.tensor3("c")
    compare_with_py([x, y, z], [linear_control.solve_sylvester(x, y, z)], [a, b, c], rtol=1e-8, atol=1e-10)


@LAPACK_ONLY
@pytest.mark.parametrize("method", ["direct", "bilinear"])
def test_lyapunov_equations(method):
    rng = np.random.default_rng(23)
    a, q = rng.normal(size=(4, 4)) * 0.3, rng.normal(size=(4, 4))
    x, y = pt.matrix("a"), pt.matrix("q")
    outputs = [linear_control.solve_discrete_lyapunov(x, y, method=method),
               linear_control.solve_continuous_lyapunov(x - 2 * pt.eye(4), y)]
    compare_with_py([x, y], outputs, [a, q], rtol=1e-7, atol=1e-9)


# --- QZ: LAPACK's gges, on the host --------------------------------------------------
# The same LAPACK routines perform calls, on the same values: results equal to the bit.


@pytest.mark.parametrize("dtype", [*FLOATS, "int64"])
@pytest.mark.parametrize("output, sort, eigenvalues", [
    ("real", None, False), ("complex", None, True), ("real", "iuc", True),
    ("real", "ouc", False), ("complex", "lhp", True), ("real", "rhp", True),
])
@LAPACK_ONLY
def test_qz_is_gges_as_perform_calls_it(dtype, output, sort, eigenvalues):
    rng = np.random.default_rng(31)
    a, b = (_general(rng, (5, 5), dtype) for _ in range(2))
    x, y = pt.matrix("a", dtype=dtype), pt.matrix("b", dtype=dtype)
    outputs = sl.qz(x, y, output=output, sort=sort, return_eigenvalues=eigenvalues)
    compare_with_py([x, y], outputs, [a, b], rtol=0, atol=0)


@LAPACK_ONLY
def test_batched_qz_broadcasts_and_fills_nan_where_gges_fails():
    rng = np.random.default_rng(32)
    a = rng.normal(size=(2, 3, 4, 4))
    a[1, 2, 0, 0] = np.inf  # gges fails for that pair alone: NaN there, as perform gives
    b = rng.normal(size=(1, 3, 4, 4))
    x, y = pt.tensor4("a"), pt.tensor("b", shape=(1, None, None, None))
    got = compare_with_py([x, y], sl.ordqz(x, y, sort="iuc"), [a, b], rtol=0, atol=0)
    assert np.isnan(got[0][1, 2]).all() and not np.isnan(got[0][1, 1]).any()


@LAPACK_ONLY
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("sort", [None, "lhp", "rhp", "iuc", "ouc"])
def test_batched_qz_is_perform_per_entry(dtype, sort):
    """The host runs a batch's LAPACK calls itself, with the whole batch's eigenvalues
    selected at once: each entry must still be perform's to the bit, through pencils
    with eigenvalues on both sides of every sort's boundary, infinite ones (a singular
    b: beta = 0), one where gges fails (NaN there) and one that is already sorted."""
    rng = np.random.default_rng(37)
    a, b = (_general(rng, (6, 5, 5), dtype) - 5 * np.eye(5, dtype=dtype) for _ in range(2))
    a[1] *= 0.3  # eigenvalues inside the unit circle too
    b[2, 0] = 0  # beta = 0: infinite eigenvalues
    a[3, 1, 1] = np.inf  # gges fails for this entry alone
    a[4], b[4] = np.diag(np.arange(-2, 3)).astype(dtype), np.eye(5, dtype=dtype)
    a[5], b[5] = np.zeros((5, 5), dtype), np.zeros((5, 5), dtype)  # alpha = beta = 0
    x, y = pt.tensor3("a", dtype=dtype), pt.tensor3("b", dtype=dtype)
    outputs = sl.qz(x, y, sort=sort, return_eigenvalues=True)
    got = compare_with_py([x, y], outputs, [a, b], rtol=0, atol=0)
    assert np.isnan(got[0][3]).all() and not np.isnan(got[0][[0, 1, 2, 4]]).any()


@LAPACK_ONLY
def test_lapack_on_the_host_keeps_subnormals_as_perform_does():
    """XLA:CPU flushes subnormals to zero on the thread it runs on, and the host's
    Python runs on that thread: perform there must compute in numpy's environment."""
    a = np.array([[1.0, 1e-310, 0.5], [3e-310, 2.0, 1e-300], [0.25, 1e-300, -1.0]])
    b = np.array([[1.0, 0.0, 2e-310], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    x, y = pt.matrix("a"), pt.matrix("b")
    outputs = [*sl.qz(x, y, sort="lhp"), *sl.schur(x, sort="lhp")]
    compare_with_py([x, y], outputs, [a, b], rtol=0, atol=0)


@LAPACK_ONLY
def test_qz_of_two_precisions_computes_in_the_declared_one():
    """perform runs gges in the first matrix's precision, so its float64-typed outputs
    hold float32 values; ours are the declared float64, gges on both matrices in it."""
    rng = np.random.default_rng(36)
    a, b = rng.normal(size=(4, 4)).astype("float32"), rng.normal(size=(4, 4))
    x, y, wide = pt.matrix("a", dtype="float32"), pt.matrix("b"), pt.matrix("a64")
    python = pytensor.function([x, y], sl.qz(x, y), mode=PY_MODE)(a, b)
    assert {r.dtype.name for r in python} == {"float32"}  # PyTensor's quirk, pinned
    got = pytensor.function([x, y], sl.qz(x, y), mode=MODE)(a, b)
    expected = pytensor.function([wide, y], sl.qz(wide, y), mode=PY_MODE)(a.astype("float64"), b)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == np.float64
        np.testing.assert_array_equal(g, e)


@LAPACK_ONLY
def test_qz_of_matrices_that_do_not_fit_raises_scipys_error():
    x, y = pt.matrix("a"), pt.matrix("b")
    fn = pytensor.function([x, y], sl.qz(x, y), mode=MODE)
    for a, b in [(np.ones((2, 3)), np.ones((2, 3))), (np.eye(2), np.eye(3))]:
        with pytest.raises(ValueError, match="Array dimensions must be square and agree"):
            fn(a, b)
    # gges refuses n = 0 (perform lets f2py's error out); the empty factorization is empty.
    assert [r.shape for r in fn(np.zeros((0, 0)), np.zeros((0, 0)))] == [(0, 0)] * 4


@LAPACK_ONLY
def test_qz_variants_with_one_module_text_get_their_own_executables():
    """Without locations, QZ Ops that differ only in `sort` lower to the same bytes: the
    function the host calls must be part of the executable cache's key."""

    rng = np.random.default_rng(33)
    a, b = rng.normal(size=(2, 4, 4))
    x, y = pt.matrix("a"), pt.matrix("b")
    modules = set()
    for sort in (None, "iuc", "ouc"):
        outputs = list(sl.qz(x, y, sort=sort))
        lowered = lower(FunctionGraph([x, y], outputs, clone=True), options=LoweringOptions(debug_info=False))
        modules.add(lowered.as_text())
        expected = pytensor.function([x, y], outputs, mode=PY_MODE)(a, b)
        for got, want in zip(lowered.compile()(a, b), expected, strict=True):
            np.testing.assert_array_equal(got, want)
    assert len(modules) == 1


@LAPACK_ONLY
def test_modules_calling_the_host_stay_off_disk_and_cpu_only(tmp_path, monkeypatch):
    from lowering import compile as comp
    from lowering.export import export_portable

    monkeypatch.setenv(comp.DISK_CACHE_ENV, str(tmp_path))
    x, y = pt.matrix("a"), pt.matrix("b")
    lowered = lower(FunctionGraph([x, y], list(sl.qz(x, y)), clone=True))
    lowered.compile()(np.eye(3), np.eye(3))
    assert not list(tmp_path.iterdir())  # a stored executable could not call perform
    with pytest.raises(NotImplementedError, match=r"calls Python on the host.*QZ.*not 'cuda'"):
        lowered.compile("cuda")
    with pytest.raises(ValueError, match=r"calls Python on the host.*QZ"):
        export_portable(lowered)


@LAPACK_ONLY
def test_qz_inside_scan():
    x = pt.tensor3("x")
    steps = pytensor.scan(lambda m: sl.qz(m, m.T)[0], sequences=[x], return_updates=False)
    compare_with_py([x], [steps], [np.random.default_rng(34).normal(size=(3, 4, 4))], rtol=0, atol=0)


@LAPACK_ONLY
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_discrete_riccati_and_its_gradient(dtype):
    """solve_discrete_are is an OpFromGraph around QZ; its gradient solves a discrete
    Lyapunov equation and, with unknown sizes, runs LAPACK on results of QZ's (the
    operand aliases there must refine with their results)."""
    rng = np.random.default_rng(35)
    m, n = 4, 2
    values = [rng.normal(size=(m, m)) * 0.5, rng.normal(size=(m, n)), np.eye(m), np.eye(n)]
    a, b, q, r = (pt.matrix(name, dtype=dtype) for name in "abqr")
    x = linear_control.solve_discrete_are(a, b, q, r)
    outputs = [x, *pytensor.grad((x ** 2).sum(), [a, b, q, r])]
    compare_with_py([a, b, q, r], outputs, [v.astype(dtype) for v in values], **LOOSE[dtype])


@LAPACK_ONLY
def test_batched_discrete_riccati_runs_as_one_batch(monkeypatch):
    """Batched, the DARE's inner graph is vectorized with its sizes unbatched (each entry
    has the same core shapes), so its eye/alloc/set-subtensor blocks are plain Ops over
    the batch and the whole batch goes to the host in one call, QZ once per entry."""
    import dialect_rules.linalg as rules

    rng = np.random.default_rng(36)
    batch, m, n = 3, 4, 2
    values = [rng.normal(size=(batch, m, m)) * 0.5, rng.normal(size=(batch, m, n)),
              np.tile(np.eye(m), (batch, 1, 1)), np.eye(n)[None]]
    a, b, q = (pt.tensor3(name) for name in "abq")
    r = pt.tensor("r", shape=(1, None, None))  # one R for every entry
    x = linear_control.solve_discrete_are(a, b, q, r)
    outputs = [x, *pytensor.grad((x ** 2).sum(), [a, r])]
    compare_with_py([a, b, q, r], outputs, values, **LOOSE["float64"])
    pencils = []  # the shapes of the pencils each host call gets
    on_host = rules._QZOnHost.__call__
    monkeypatch.setattr(rules._QZOnHost, "__call__", lambda self, h, j: pencils.append((h.shape, j.shape))
                        or on_host(self, h, j))
    pytensor.function([a, b, q, r], x, mode=MODE)(*values)
    assert pencils == [((batch, 2 * m, 2 * m),) * 2]


def test_tensor_inverse_and_solve():
    rng = np.random.default_rng(24)
    w = pt.tensor3("w")
    square = rng.normal(size=(6, 2, 3)) + np.eye(6).reshape(6, 2, 3) * 3
    compare_with_py([w], [nl.tensorinv(w, 1)], [square], rtol=1e-8, atol=1e-10)
    b, t = pt.matrix("b"), pt.tensor4("t")
    coefficients = rng.normal(size=(2, 3, 2, 3)) + np.eye(6).reshape(2, 3, 2, 3) * 3
    compare_with_py([t, b], [nl.tensorsolve(t, b)], [coefficients, rng.normal(size=(2, 3))], rtol=1e-8, atol=1e-10)
    fn = pytensor.function([w], nl.tensorinv(w, 1), mode=MODE)
    with pytest.raises(np.linalg.LinAlgError):
        fn(np.zeros((6, 2, 3)))


@pytest.mark.parametrize(
    "build, dtype",
    [
        (lambda x: sl.qr(x)[0], "complex128"),  # PyTensor types complex QR as float64
        (lambda x: nl.eigh(x)[1], "complex128"),  # eigenvectors typed real
        (lambda x: sl.lu_factor(x)[0], "int64"),  # LU factors typed int64
        (lambda x: sl.expm(x), "int32"),
        (lambda x: nl.lstsq(x, x, -1)[0], "complex128"),  # x typed float64
    ],
)
def test_results_pytensor_types_narrower_than_their_values_are_refused(build, dtype):
    # Converting would silently drop the imaginary part or the fraction: a clear error instead.
    x = pt.matrix("x", dtype=dtype)
    with pytest.raises(UnsupportedParameterError, match="PyTensor types output"):
        pytensor.function([x], build(x), mode=MODE)



@pytest.mark.parametrize("a_dtype", ["int8", "int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("b_dtype", ["int64", "float32"])
def test_solves_of_integer_matrices_run_as_in_the_python_mode(a_dtype, b_dtype):
    """PyTensor factors an a shared by several solves (a gradient's) into `lu_factor(a)`,
    whose factor it types with a's integer dtype; such solves run as in the Python mode,
    in the outer graph, batched and in a Scan's step (rewrites.solve_integer_matrices_as_floats)."""
    rng = np.random.default_rng(7)
    if a_dtype == "bool":  # unit upper triangular: never singular
        values = np.triu(rng.random((2, 3, 3)) < 0.5, 1) | np.eye(3, dtype=bool)
    else:
        values = (rng.integers(0, 4, (2, 3, 3)) + 5 * np.eye(3)).astype(a_dtype)
    b_values = rng.integers(-3, 4, (2, 3)).astype(b_dtype)
    a, b = pt.tensor("a", shape=(None, 3, 3), dtype=a_dtype), pt.tensor("b", shape=(None, 3), dtype=b_dtype)
    x = sl.solve(a, b, b_ndim=1)
    outputs = [x, sl.solve(pt.swapaxes(a, -1, -2), b, b_ndim=1) + x, (nl.matrix_inverse(a[0]) @ b.T).T]
    if b_dtype.startswith("float"):
        outputs.append(pytensor.grad(x.sum(), b))
    tol = {"rtol": 1e-5, "atol": 1e-6} if b_dtype == "float32" else {}
    compare_with_py([a, b], outputs, [values, b_values], **tol)
    # In a Scan's step, against float64 numpy: the Python mode's Scan runs its step
    # rewritten, and PyTensor's LUFactor of an int8, int16, uint8 or bool matrix is
    # scipy's lu_factor, which computes in float32 (7e-9 off here) where the solve the
    # graph holds computes in float64.
    v = pt.dvector("v")
    steps = pytensor.scan(lambda v, m: sl.solve(m, v) + sl.solve(m.T, v), outputs_info=[v],
                          non_sequences=[a[0]], n_steps=3, return_updates=False)
    got, grad = pytensor.function([a, v], [steps, pytensor.grad(steps[-1].sum(), v)], mode=MODE)(values, [1.0, -2.0, 3.0])
    m = values[0].astype("float64")
    step = np.linalg.inv(m) + np.linalg.inv(m.T)
    expected = [np.linalg.matrix_power(step, k) @ [1.0, -2.0, 3.0] for k in (1, 2, 3)]
    np.testing.assert_allclose(got, expected, rtol=1e-13)
    np.testing.assert_allclose(grad, np.linalg.matrix_power(step, 3).T @ np.ones(3), rtol=1e-13)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_log_det_of_a_batch_of_matrices_is_slogdet(dtype):
    """log(det(x)), log(abs(det(x))) and sign(det(x)) become SLogDet for any batch of
    matrices (PyTensor's rewrite asserted a matrix: rewrites.slogdet_of_batched_det)."""
    values = np.array([[[2.0, 1.0], [1.0, 3.0]], [[0.0, 1.0], [1.0, 0.0]], [[1.0, 2.0], [2.0, 4.0]]], dtype)
    x = pt.tensor("x", shape=(None, 2, 2), dtype=dtype)
    det = nl.det(x)
    outputs = [pt.log(det), pt.log(pt.abs(det)), pt.sign(det), *nl.slogdet(x), pt.log(nl.det(x[0]))]
    fn = pytensor.function([x], outputs, mode=MODE)
    assert any(isinstance(getattr(node.op, "core_op", None), nl.SLogDet) for node in fn.maker.fgraph.apply_nodes)
    got = compare_with_py([x], outputs, [values])
    np.testing.assert_array_equal(got[0][1:], [np.nan, -np.inf])  # det -1 and 0
    np.testing.assert_array_equal(got[2], [1, -1, 0])
    z = pt.zmatrix("z")  # the log of a complex determinant keeps its phase
    compare_with_py([z], [pt.log(nl.det(z))], [np.array([[1 + 2j, 0.5], [0.3j, 2 - 1j]])])

def test_lu_solve_and_expm_gradient():
    rng = np.random.default_rng(25)
    a, b = rng.normal(size=(4, 4)), rng.normal(size=(4, 2))
    x, y, t = pt.matrix("a"), pt.matrix("b"), pt.tensor3("t")
    factors = sl.lu_factor(x)
    outputs = [sl.lu_solve(factors, y), sl.lu_solve(factors, y, trans=1),
               *pytensor.grad(sl.lu_solve(factors, y).sum(), [x, y]), pytensor.grad(sl.expm(0.3 * x).sum(), x)]
    compare_with_py([x, y], outputs, [a, b], rtol=1e-8, atol=1e-10, modes=(MODE,))
    batched = sl.lu_solve(sl.lu_factor(t), y)  # b[perm] per batch entry: Blockwise(AdvancedSubtensor)
    compare_with_py([t, y], [batched], [rng.normal(size=(3, 4, 4)) + 4 * np.eye(4), b], rtol=1e-8, atol=1e-10)


def test_compiling_library_calls_for_another_platform_says_why():
    x = pt.matrix("x")
    fg = FunctionGraph([x], [sl.cholesky(x)], clone=True)
    with pytest.raises(ValueError, match=r"lowered for 'cpu' and calls lapack_dpotrf_ffi.*LoweringOptions\(platform='cuda'\)"):
        lower(fg).compile("cuda")
    with pytest.raises(ValueError, match=r"lowered for 'cuda' and calls cusolver_potrf_ffi"):
        lower(fg, options=LoweringOptions(platform="cuda")).compile("cpu")
    with pytest.raises(ValueError, match=r"platform='tpu'.*expected one of cpu, cuda"):
        LoweringOptions(platform="tpu")


def test_the_cuda_mode_without_a_gpu_says_what_is_missing():
    import jax

    try:
        jax.devices("cuda")
        pytest.skip("this machine has a CUDA backend")
    except RuntimeError:
        pass
    x = pt.matrix("x")
    with pytest.raises(RuntimeError, match=r"no XLA backend for platform 'cuda' here.*CUDA plugin"):
        pytensor.function([x], sl.cholesky(x), mode="STABLEHLO_CUDA")


def _cuda_text(inputs, outputs) -> str:
    return lower(FunctionGraph(inputs, outputs, clone=True), options=LoweringOptions(platform="cuda")).as_text()


def test_lowering_for_cuda_calls_cusolver_as_jax_does():
    # The targets and attributes JAX emits on CUDA (jax._src.lax.linalg); running them
    # needs a GPU: STABLEHLO_TEST_PLATFORM=cuda runs this file's differential tests there.
    x, m = pt.tensor3("x"), pt.matrix("m")
    cases = {
        "cusolver_potrf_ffi": ([x], [sl.cholesky(x)], "lower = false"),
        "cusolver_getrf_ffi": ([m], [nl.det(m)], "backend_config = {}"),
        "cusolver_syevd_ffi": ([m], list(nl.eigh(m)), "algorithm = 0 : ui8, lower = true"),
        "cusolver_gesvdj_ffi": ([x], list(nl.svd(x, full_matrices=False)), "compute_uv = true, full_matrices = false"),
        "cusolver_geev_ffi": ([m], list(nl.eig(m)), "left = false, right = true"),
        "cusolver_orgqr_ffi": ([m], list(sl.qr(m)), "backend_config = {}"),
    }
    for target, (inputs, outputs, attributes) in cases.items():
        calls = [line for line in _cuda_text(inputs, outputs).splitlines() if f"@{target}(" in line]
        assert calls and attributes in calls[0], (target, calls)
        assert "lapack" not in _cuda_text(inputs, outputs)
    # Triangular solves are XLA's own op there (cuBLAS's trsm).
    assert "stablehlo.triangular_solve" in _cuda_text([x, x], [sl.solve_triangular(x, x, lower=True)])


def test_lowering_for_cuda_refuses_what_cusolver_lacks():
    m = pt.matrix("m")
    for outputs, routine in [
        (list(sl.schur(m)), r"platform 'cuda'.*no Schur decomposition \(gees\).*node: .*Schur"),
        (list(sl.qr(m, pivoting=True)), r"platform 'cuda'.*no pivoted QR \(geqp3\).*node: .*QR"),
        (list(sl.qz(m, m)), r"platform 'cuda'.*XLA's CPU callback.*node: .*QZ"),
    ]:
        with pytest.raises(UnsupportedParameterError, match=routine):
            _cuda_text([m], outputs)


_BAD_SHAPES = {
    # name: (graph, values) where numpy/scipy raise; the exception type must be theirs.
    "cholesky": (lambda x, y: sl.cholesky(x), (np.ones((3, 4)), None)),
    "inv": (lambda x, y: nl.matrix_inverse(x), (np.ones((3, 4)), None)),
    "det": (lambda x, y: nl.det(x), (np.ones((3, 4)), None)),
    "eigh": (lambda x, y: nl.eigh(x)[0], (np.ones((3, 4)), None)),
    "eig": (lambda x, y: nl.eig(x)[0], (np.ones((3, 4)), None)),
    "schur": (lambda x, y: sl.schur(x)[0], (np.ones((3, 4)), None)),
    "schur sort": (lambda x, y: sl.schur(x, sort="lhp")[0], (np.ones((3, 4)), None)),
    "expm": (lambda x, y: sl.expm(x), (np.ones((3, 4)), None)),
    "eigvalsh": (lambda x, y: sl.eigvalsh(x, NoneConst), (np.ones((3, 4)), None)),
    "solve": (lambda x, y: sl.solve(x, y), (np.ones((3, 4)), np.ones((3, 2)))),
    "solve_triangular rows": (lambda x, y: sl.solve_triangular(x, y), (np.eye(3), np.ones((5, 2)))),
    "solve_triangular square": (lambda x, y: sl.solve_triangular(x, y), (np.ones((3, 4)), np.ones((3, 2)))),
    "cho_solve rows": (lambda x, y: sl.cho_solve((x, True), y), (np.eye(3), np.ones((5, 2)))),
}


@pytest.mark.parametrize("case", [
    pytest.param(case, marks=LAPACK_ONLY) if case.startswith("schur") else case for case in sorted(_BAD_SHAPES)
])
def test_shapes_numpy_refuses_raise_its_exception_and_never_reach_lapack(case):
    # Before: a 3x4 "square" matrix ran LAPACK on 3x3 of it and a 5-row right-hand side
    # made trsm read past a 3x3 matrix, both returning numbers.
    build, (a, b) = _BAD_SHAPES[case]
    x, y = pt.matrix("x"), pt.matrix("y")
    inputs, values = ([x, y], [a, b]) if b is not None else ([x], [a])
    out = build(x, y)
    with pytest.raises(Exception) as expected:
        pytensor.function(inputs, out, mode=PY_MODE)(*values)
    # Schur's perform calls LAPACK's gees through f2py, whose argument check raises
    # f2py's own `error`; scipy.linalg.schur raises ValueError, which is what we raise.
    error = ValueError if case.startswith("schur") else type(expected.value)
    fn = pytensor.function(inputs, out, mode=MODE)
    with pytest.raises(error) as got:
        fn(*values)
    assert "do not fit the graph" not in str(got.value)  # the check reports it, not a shape clash
    if not case.startswith("schur"):  # CUDA modules refine to such shapes too (no GPU needed)
        lowered = lower(FunctionGraph(inputs, [out], clone=True), options=LoweringOptions(platform="cuda"))
        lowered.specialize(*values)
    good = [np.eye(3) * 2] + ([np.ones((3, 2))] if b is not None else [])
    np.testing.assert_allclose(
        np.asarray(fn(*good)), np.asarray(pytensor.function(inputs, out, mode=PY_MODE)(*good)), rtol=1e-12
    )


def test_empty_non_square_cholesky_is_returned_as_perform_does():
    x = pt.matrix("x")
    compare_with_py([x], [sl.cholesky(x)], [np.zeros((0, 3))])


# --- PyMC's positive-definiteness test (LKJCorr's and Wishart's logp) --------------------


def matrix_pos_def(x):
    from pymc.distributions.multivariate import matrix_pos_def

    return matrix_pos_def(x)

# (matrix, the dtype kinds it is valid for): perform is scipy.linalg.cholesky's success,
# which reads only the upper triangle, so the lower one is garbage in some.
_POS_DEF_CASES = [
    (np.eye(3), "biuf c"),
    (np.zeros((0, 0)), "biuf c"),  # scipy: an empty matrix factors
    (np.zeros((2, 2)), "biuf c"),
    (np.ones((2, 2)), "biuf c"),  # singular: the second pivot is exactly 0
    (np.array([[4, 2, 0], [2, 5, 1], [0, 1, 3]]), "iuf c"),
    (np.array([[2, 1], [7, 2]]), "iuf c"),  # upper triangle positive definite
    (np.array([[1, 3], [1, 1]]), "iuf c"),  # upper triangle indefinite
    (np.array([[-1, 0], [0, 1]]), "if c"),
    (np.array([[1, 1 - 1e-6], [1 - 1e-6, 1]]), "f c"),  # float16 rounds it to singular
    (np.array([[2, 1j], [-1j, 2]]), "c"),
    (np.array([[2, 1j], [5, 2]]), "c"),  # Hermitian upper triangle, garbage below
    (np.array([[1, 2j], [-2j, 1]]), "c"),
]


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "uint16", "float16", "float32", "float64",
                                   "complex64", "complex128"])
def test_pos_def_matrix_as_scipy(dtype):
    x = pt.matrix("x", dtype=dtype)
    ours = pytensor.function([x], matrix_pos_def(x), mode=MODE)
    reference = pytensor.function([x], matrix_pos_def(x), mode=PY_MODE)
    answers = set()
    for matrix, kinds in _POS_DEF_CASES:
        if np.dtype(dtype).kind not in kinds:
            continue
        value = matrix.astype(dtype)
        got, expected = ours(value), reference(value)
        assert got.dtype == expected.dtype == np.bool_ and got.shape == ()
        assert got == expected, (dtype, value)
        answers.add(bool(expected))
    assert answers == {True, False}


def test_pos_def_matrix_errors_as_scipy():
    x, z = pt.dmatrix("x"), pt.zmatrix("z")
    f = pytensor.function([x], matrix_pos_def(x), mode=MODE)
    with pytest.raises(ValueError, match="Input array is expected to be square"):
        f(np.ones((2, 3)))
    for bad in (np.nan, -np.inf):
        a = np.eye(2)
        a[1, 0] = bad  # in the triangle potrf does not read: scipy checks all of x
        with pytest.raises(ValueError, match="array must not contain infs or NaNs"):
            f(a)
    assert f(np.eye(2))  # and the function keeps working
    g = pytensor.function([z], matrix_pos_def(z), mode=MODE)
    with pytest.raises(ValueError, match="array must not contain infs or NaNs"):
        g(np.array([[1, complex(0, np.inf)], [0, 1]]))
