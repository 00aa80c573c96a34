"""Linear algebra (nlinalg, slinalg): LAPACK through the typed-FFI targets jaxlib
registers with XLA's CPU client (triangular solves too: trsm was 2-4x faster than
XLA's own `triangular_solve`), and small graphs between them. QZ, whose gges jaxlib
lacks, is PyTensor's perform called back on the host. Lowered for CUDA
(`LoweringOptions.platform`), the calls are jaxlib's cuSOLVER handlers and XLA's
`triangular_solve`, as JAX emits them there; what cuSOLVER lacks (gees, geqp3) and the
host callback are refused for it.

Every rule is batched: the plain Op is the `batch_ndim == 0` case of its Blockwise
rule, and one LAPACK call factors the whole batch. LAPACK works on column-major
matrices; the custom calls' layouts say so and XLA inserts the transposes (none for
potrf and trsm, which are handed transposed views).

Shapes are checked as numpy and scipy check them (a matrix that must be square, a
right-hand side of the wrong length): the same exception, at call time, and LAPACK is
never called with such shapes. Failures follow `Op.perform`: NaN where PyTensor's
perform fills NaN (Cholesky, LUFactor, the solves), numpy's `LinAlgError` where numpy
raises (inv, eigh, svd, eig), as a run-time check of the function; inside a loop body,
where nothing can raise, the result is NaN instead.
"""

from __future__ import annotations

import functools

import numpy as np
import pytensor.tensor as pt
import scipy.linalg as scipy_linalg
from jax.extend.mlir import ir
from jax.extend.mlir.dialects import stablehlo as hlo
from pytensor.tensor.nlinalg import (
    SVD,
    Det,
    Eig,
    Eigh,
    EighGrad,
    Lstsq,
    MatrixInverse,
    MatrixPinv,
    SLogDet,
    TensorInv,
    TensorSolve,
)
from pytensor.tensor.slinalg import (
    LU,
    BlockDiagonal,
    Cholesky,
    CholeskySolve,
    Eigvalsh,
    EigvalshGrad,
    Expm,
    LUFactor,
    PivotToPermutations,
    QR,
    QZ,
    Schur,
    Solve,
    SolveTriangular,
)
from pytensor.tensor._linalg.solve.linear_control import TRSYL
from pytensor.tensor._linalg.solve.tridiagonal import LUFactorTridiagonal, SolveLUFactorTridiagonal

from lowering._jax_internal import lapack_target
from lowering.builders import (
    Dim,
    broadcast_in_dim,
    compare,
    conj,
    convert,
    custom_call,
    diagonal,
    dim_add,
    dim_max,
    dim_min,
    dim_product,
    dim_size,
    dim_sub,
    dim_value,
    divide,
    dot_general,
    dynamic_index,
    full,
    full_like,
    identity_matrix,
    iota,
    is_complex,
    is_nan,
    is_static,
    reshape,
    result_type,
    row_major,
    select,
    shape_of,
    slice_axis,
    transpose,
    value_dtype,
)
from lowering.errors import UnsupportedParameterError
from lowering.regions import any_true, fold, if_else, while_loop
from lowering.registry import register_batched, register_lowering
from lowering.types import static_shape


def linalg_rule(*op_classes):
    """Register a batched rule `fn(ctx, node, batch_ndim, *operands)` for the Op's
    Blockwise form, and the same rule with no batch dims for the plain Op."""

    def decorate(fn):
        register_batched(*op_classes)(fn)
        register_lowering(*op_classes)(lambda ctx, node, *operands: fn(ctx, node, 0, *operands))
        return fn

    return decorate


def core_op(node):
    """The linear-algebra Op itself, under a Blockwise or not."""
    return getattr(node.op, "core_op", node.op)


# --- dtypes and LAPACK calls ------------------------------------------------------


def _lapack_dtype(dtype) -> str:
    """The precision LAPACK computes a result of `dtype` in (s, d, c or z)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return "complex64" if dtype == np.complex64 else "complex128"
    return "float32" if dtype.kind == "f" and dtype.itemsize <= 4 else "float64"


def _complex_dtype(dtype) -> str:
    """The complex dtype holding values of `dtype` (complex64 for float32 and below)."""
    return np.promote_types(dtype, np.complex64).name


def _real_dtype(dtype) -> str:
    return {"complex64": "float32", "complex128": "float64"}.get(np.dtype(dtype).name, np.dtype(dtype).name)


def _in_precision(node, *operands, out=0, double=False):
    """Operands converted to the LAPACK precision of output `out`, and that precision.
    `double`: numpy.linalg's (double or complex double whatever the input, the result
    rounded to the output's type), for the Ops whose perform calls numpy.linalg."""
    dtype = np.dtype(node.outputs[out].type.dtype)
    if any(is_complex(x) for x in operands):  # eigh, eigvalsh: real results of complex input
        dtype = np.promote_types(dtype, np.complex64)
    if double:
        dtype = np.promote_types(dtype, np.float64)
    dtype = _lapack_dtype(dtype)
    return [convert(x, dtype) for x in operands], dtype


def _declared(node, value: ir.Value, i: int) -> ir.Value:
    """`value` as output i's dtype. Where PyTensor types a result narrower than the values
    numpy computes (QR of a complex matrix typed real, Expm or LUFactor of an integer
    matrix typed integer), converting would silently drop digits: refused instead."""
    declared = np.dtype(node.outputs[i].type.dtype)
    computed = np.dtype(value_dtype(value))
    if (computed.kind == "c" and declared.kind != "c") or (computed.kind == "f" and declared.kind in "iub"):
        raise UnsupportedParameterError(
            node, f"input dtype {node.inputs[0].type.dtype}",
            f"PyTensor types output {i} as {declared.name} but its values are {computed.name}",
        )
    return convert(value, declared)


def _layout(rank: int, matrix_rank: int) -> tuple[int, ...]:
    """Column-major for matrices (batch dims slowest), row-major for the rest."""
    if rank == matrix_rank:
        return (rank - 2, rank - 1, *range(rank - 3, -1, -1))
    return row_major(rank)


def _char(c: str) -> ir.Attribute:
    return ir.IntegerAttr.get(ir.IntegerType.get_unsigned(8), ord(c))


def _cpu_only(ctx, node, routine: str) -> None:
    """Refuse, naming the node, what only LAPACK does where the module is for a GPU."""
    if ctx.on_gpu:
        raise UnsupportedParameterError(
            node, f"platform {ctx.options.platform!r}",
            f"cuSOLVER has no {routine}: lower it for platform 'cpu'",
        )


def lapack(routine: str, dtype, operands, results, aliases=None, identity=(), agree=(), **chars) -> list[ir.Value]:
    """One batched LAPACK call (CPU); `chars` are its one-letter options (uplo="L", ...)."""
    config = {k: _char(v) for k, v in chars.items()}
    return _library_call(lapack_target(routine, dtype), operands, results, config, aliases, identity, agree)


def cusolver(routine: str, operands, results, aliases=None, identity=(), agree=(), **attrs) -> list[ir.Value]:
    """One batched call of jaxlib's cuSOLVER handler `cusolver_<routine>_ffi` (CUDA), the
    target JAX emits; `attrs` typed as the handler reads them (bools, small enums as ui8)."""
    u8 = ir.IntegerType.get_unsigned(8)
    config = {k: ir.BoolAttr.get(v) if isinstance(v, bool) else ir.IntegerAttr.get(u8, v) for k, v in attrs.items()}
    return _library_call(f"cusolver_{routine}_ffi", operands, results, config, aliases, identity, agree)


def _library_call(target: str, operands, results, config, aliases, identity, agree) -> list[ir.Value]:
    """A custom call with column-major matrices (batch dims slowest), run only where it is
    safe (`_when_safe`)."""
    rank = max(len(static_shape(x.type)) for x in operands)

    def call():
        return custom_call(
            target, operands, results, config=config,
            operand_layouts=[_layout(len(static_shape(x.type)), rank) for x in operands],
            result_layouts=[_layout(len(dims), rank) for dims, _ in results],
            aliases=aliases,
        )

    return _when_safe(operands, results, call, identity, agree)


def _when_safe(operands, results, call, identity=(), agree=()) -> list[ir.Value]:
    """`call()`'s results where the library call is safe: every operand non-empty
    (jaxlib's handlers divide by the matrix size) and each pair of dims in `agree`
    equal (LAPACK reads a square matrix's order from one dim and would run off the
    other). Otherwise zeros, or identity matrices for the results listed in
    `identity` (numpy's U and Vh of an empty SVD, Q of an empty QR); the rules raise
    numpy's error for mismatched shapes themselves. Conditions known only at run time
    become a `stablehlo.if`, which folds away once the call's shapes are.
    """

    def empty():
        return [identity_matrix(dims, dt) if i in identity else full(0, dims, dt) for i, (dims, dt) in enumerate(results)]

    conditions = [_dims_differ(dim_product(shape_of(x)), 0) for x in operands]
    conditions += [_dims_equal(a, b) for a, b in agree]
    if any(c is False for c in conditions):
        return empty()
    pending = [c for c in conditions if c is not True]
    if not pending:
        return call()
    runs = pending[0]
    for c in pending[1:]:
        runs = hlo.and_(runs, c)
    return if_else(runs, [result_type(dims, dt) for dims, dt in results], call, empty)


def _dims_differ(a: Dim, b: Dim):
    """a != b: a Python bool where both dims are static, else a 0-d i1."""
    if isinstance(a, int) and isinstance(b, int):
        return a != b
    return compare(dim_value(a), dim_value(b), "NE")


def _dims_equal(a: Dim, b: Dim):
    differ = _dims_differ(a, b)
    return (not differ) if isinstance(differ, bool) else hlo.not_(differ)


def _matrix_dims(x: ir.Value) -> tuple[Dim, Dim]:
    rank = len(static_shape(x.type))
    return dim_size(x, rank - 2), dim_size(x, rank - 1)


_NOT_SQUARE = "Last 2 dimensions of the array must be square"  # numpy.linalg's words


def _require(ctx, pairs, error=np.linalg.LinAlgError, message=_NOT_SQUARE, unless=None) -> None:
    """Raise `error(message)` at call time unless each pair of dims is equal, as numpy and
    scipy check their arguments (LAPACK is not called with such shapes: see `lapack`).
    `unless` (a Python bool or 0-d i1) lets the shapes pass."""
    for a, b in pairs:
        bad = _dims_differ(a, b)
        if bad is False:
            continue
        bad = _i1(bad)
        if unless is not None:
            bad = hlo.and_(bad, hlo.not_(_i1(unless)))
        ctx.runtime_check(bad, error, message)


def _square(ctx, a: ir.Value, error=np.linalg.LinAlgError, message=_NOT_SQUARE) -> ir.Value:
    """`a`, checked square as `_require` checks it (the error is raised at call time).
    For rules whose ops assume n x n matrices: a non-square `a` is cut to its leading
    k x k block (k the smaller dim), so those ops keep consistent shapes when a call's
    shapes are specialized and the check, not a shape mismatch, reports the input."""
    m, n = _matrix_dims(a)
    _require(ctx, [(m, n)], error, message)
    if _dims_differ(m, n) is False:
        return a
    rank = len(static_shape(a.type))
    k = dim_min(m, n)
    return slice_axis(slice_axis(a, rank - 2, 0, k), rank - 1, 0, k)


def _i1(condition) -> ir.Value:
    return full(condition, (), "bool") if isinstance(condition, bool) else condition


def _info_ok(info: ir.Value) -> ir.Value:
    return compare(info, full_like(info, 0), "EQ")


def _nan_unless(ok: ir.Value, x: ir.Value) -> ir.Value:
    """x where the batch entry's `ok` holds, NaN (in every element) elsewhere."""
    dims = shape_of(x)
    ok = broadcast_in_dim(ok, dims, range(len(static_shape(ok.type))))
    return select(ok, x, full_like(x, np.nan))


def _failed(ctx, ok: ir.Value, values, message: str, error: type = np.linalg.LinAlgError):
    """numpy raises `error(message)` unless every batch entry is `ok`; inside a loop
    body, where nothing can raise, the failed entries become NaN."""
    if ctx.can_raise():
        ctx.runtime_check(any_true(hlo.not_(ok)), error, message)
        return values
    return [_nan_unless(ok, v) for v in values]


def _check_finite(ctx, matrices, batch_ndim: int):
    """scipy's `check_finite` (on by default, and PyTensor's perform keeps it for `lu`,
    `eigvalsh` and its gradient): ValueError where any matrix holds a NaN or an
    infinity anywhere, its unread triangle included; `_failed` inside a loop body."""
    ok = functools.reduce(hlo.and_, [_all_finite(m, [batch_ndim, batch_ndim + 1]) for m in matrices])
    return _failed(ctx, ok, matrices, "array must not contain infs or NaNs", ValueError)


# --- matrix helpers ---------------------------------------------------------------


def _positions(dims):
    rank = len(dims)
    return iota(dims, rank - 2, "int64"), iota(dims, rank - 1, "int64")


def _triangle(x: ir.Value, lower: bool, k: int = 0) -> ir.Value:
    """np.tril(x, k) / np.triu(x, k) over the last two axes."""
    rows, cols = _positions(shape_of(x))
    shifted = rows if k == 0 else hlo.add(rows, full_like(rows, k))
    keep = compare(cols, shifted, "LE" if lower else "GE")
    return select(keep, x, full_like(x, 0))


def _mT(x: ir.Value) -> ir.Value:
    rank = len(static_shape(x.type))
    return transpose(x, [*range(rank - 2), rank - 1, rank - 2])


def _mH(x: ir.Value) -> ir.Value:
    return conj(_mT(x))


def _along(v: ir.Value, dims, axis: int) -> ir.Value:
    """A per-position vector (*batch, n) broadcast over matrices, indexed by `axis`."""
    batch_ndim = len(dims) - 2
    return broadcast_in_dim(v, dims, [*range(batch_ndim), axis])


def _on_band(dims, offset: int):
    """Where [..., i, j] has j - i == offset, and the axis that indexes such an entry by
    k = min(i, j): rows on and above the diagonal, columns below it."""
    rows, cols = _positions(dims)
    shifted = rows if offset == 0 else hlo.add(rows, full_like(rows, offset))
    return compare(cols, shifted, "EQ"), len(dims) - (2 if offset >= 0 else 1)


def _set_diagonal(x: ir.Value, offset: int, where: ir.Value, values: ir.Value) -> ir.Value:
    """x with x[..., k, k + offset] = values[k] where where[k] (vectors (*batch, n))."""
    dims = shape_of(x)
    mask, axis = _on_band(dims, offset)
    return select(hlo.and_(mask, _along(where, dims, axis)), _along(values, dims, axis), x)


def _shifted(v: ir.Value, axis: int, step: int) -> ir.Value:
    """v[k + step] along `axis` (step +1 or -1), zero where that is out of range: a pad
    that drops `step` elements at one end and adds as many zeros at the other."""
    low = [0] * len(static_shape(v.type))
    high = list(low)
    low[axis], high[axis] = -step, step
    attr = ir.DenseI64ArrayAttr.get
    return hlo.pad(v, full(0, (), value_dtype(v)), attr(low), attr(high), attr([0] * len(low)))


def _sum(x: ir.Value, axes) -> ir.Value:
    return fold(x, axes, hlo.add, 0)


def _max_abs_sum(a: ir.Value, axis: int, batch_ndim: int) -> ir.Value:
    """Per batch entry, the largest sum of |a| along `axis` (the 1-norm for the row
    axis, the infinity-norm for the column axis)."""
    return fold(_sum(hlo.abs(a), [axis]), [batch_ndim], hlo.maximum, 0.0)


def _matmul(a: ir.Value, b: ir.Value, batch_ndim: int) -> ir.Value:
    batch = tuple(range(batch_ndim))
    return dot_general(a, b, ((batch_ndim + 1,), (batch_ndim,)), (batch, batch))


def _solve_triangular(ctx, a, b, *, lower, unit=False, transpose="NO_TRANSPOSE"):
    """op(a) x = b for (batched) matrices b; op is a, a.T or a.H.

    On CPUs, up to _SUBSTITUTION_MAX unknowns known statically: `_substitution`. Otherwise
    LAPACK's trsm, as JAX lowers it on CPU: XLA's own triangular_solve was 2-4x
    slower here (N = 100 and 1,000). It is handed a.T and b.T, which are our
    row-major a and b read column-major with no copy, and solves from the right:
    x.T op(a).T = b.T is x'.T op(a') = b' with a' = a.T, the same op and the other
    triangle.
    """
    dtype = value_dtype(b)
    n, rows = _matrix_dims(a), _matrix_dims(b)[0]
    sizes = (*n, rows)
    if not ctx.on_gpu and is_static(sizes) and len(set(sizes)) == 1 and 0 < rows <= _SUBSTITUTION_MAX:
        return _substitution(a, b, lower=lower, unit=unit, transpose=transpose)
    agree = [n, (n[0], rows)]
    if ctx.on_gpu:  # XLA's own op, cuBLAS's trsm on GPUs (what JAX emits there)
        # Its shapes must agree to refine even where the call never runs.
        rank = len(static_shape(a.type))
        square = _fit(_fit(a, rank - 2, rows), rank - 1, rows)

        def call():
            return [hlo.triangular_solve(square, b, True, bool(lower), bool(unit), hlo.TransposeAttr.get(transpose))]

        [x] = _when_safe([a, b], [(shape_of(b), dtype)], call, agree=agree)
        return x
    b_t = _mT(b)
    [x_t] = lapack(
        "trsm", dtype, [_mT(a), b_t], [(shape_of(b_t), dtype)], aliases={1: 0}, agree=agree,
        side="R", uplo="U" if lower else "L", diag="U" if unit else "N",
        trans_x={"NO_TRANSPOSE": "N", "TRANSPOSE": "T", "ADJOINT": "C"}[transpose],
    )
    return _mT(x_t)


# Triangular systems of at most this many unknowns (static) are solved by substitution
# written out: elementwise ops over the rows of b that XLA fuses, where trsm is a custom
# call of its own. Best of 5 medians, L x = b for b of 500 columns: 3 unknowns 20.4 ->
# 17.1 µs a call, 8 37.3 -> 22.4 (20,000 columns: 494 -> 338); 12 were slower (28.8 ->
# 53.4). The LKJ MvNormal model's four 3 x 3 solves: 53.1 -> 46.1 µs a call.
_SUBSTITUTION_MAX = 8


def _substitution(a, b, *, lower, unit, transpose):
    """`_solve_triangular` of a static n x n `a` by forward (op(a) lower) or back
    substitution: x_i = (b_i - sum_k op(a)_ik x_k) / op(a)_ii, the solved rows subtracted
    in the order they were solved, as LAPACK's trsm does."""
    rank = len(static_shape(a.type))
    n = static_shape(a.type)[-1]
    flip = transpose != "NO_TRANSPOSE"
    rows = [slice_axis(b, rank - 2, i, i + 1) for i in range(n)]  # (*batch, 1, k)

    def entry(i, k):  # op(a)[i, k], broadcast over a row of b
        r, c = (k, i) if flip else (i, k)
        e = slice_axis(slice_axis(a, rank - 2, r, r + 1), rank - 1, c, c + 1)
        e = conj(e) if transpose == "ADJOINT" else e
        return broadcast_in_dim(e, shape_of(rows[i]), range(rank))

    x, solved = [None] * n, []
    for i in range(n) if lower != flip else reversed(range(n)):
        acc = rows[i]
        for k in solved:
            acc = hlo.subtract(acc, hlo.multiply(entry(i, k), x[k]))
        x[i] = acc if unit else divide(acc, entry(i, i))
        solved.append(i)
    return hlo.concatenate(x, rank - 2)


def _fit(x: ir.Value, axis: int, length: Dim) -> ir.Value:
    """x's first `length` entries along `axis`, zero-padded: x itself where it has that
    many. Where it has not, the rule raises numpy's error; this keeps the ops that
    follow valid IR once shapes are refined."""
    dims = shape_of(x)
    if _dims_equal(dims[axis], length) is True:
        return x
    zeros = list(dims)
    zeros[axis] = length
    padded = hlo.concatenate([x, full(0, zeros, value_dtype(x))], axis)
    return slice_axis(padded, axis, 0, length)


def _as_matrix(b, b_ndim):
    """A b of b_ndim 1 as a one-column matrix (and the inverse)."""
    if b_ndim == 2:
        return b, lambda x: x
    dims = shape_of(b)
    return reshape(b, [*dims, 1]), lambda x: reshape(x, dims)


def _hermitian_from(a, lower: bool, conjugate: bool):
    """The symmetric (Hermitian) matrix whose `lower` (or upper) triangle is a's."""
    tri = _triangle(a, lower)
    strict = _triangle(a, lower, -1 if lower else 1)
    other = _mH(strict) if conjugate else _mT(strict)
    full_matrix = hlo.add(tri, other)
    if conjugate and is_complex(a):  # LAPACK's he* routines read only the real diagonal
        rows, cols = _positions(shape_of(a))
        real = hlo.complex(hlo.real(full_matrix), full_like(hlo.real(full_matrix), 0))
        full_matrix = select(compare(rows, cols, "EQ"), real, full_matrix)
    return full_matrix


# --- factorizations ---------------------------------------------------------------


def _potrf(ctx, a, lower: bool):
    """Cholesky factor (other triangle zeroed) and whether each factorization worked.

    potrf is handed a.T (our row-major a read column-major, no copy) for the other
    triangle: for Hermitian a, the factor of a.T's upper triangle U (U^H U = a.T)
    gives a's lower factor as U.T, which is again a view."""
    dtype = value_dtype(a)
    a_t = _mT(a)
    dims = shape_of(a_t)
    results = [(dims, dtype), (dims[:-2], "int32")]
    if ctx.on_gpu:
        factor_t, info = cusolver("potrf", [a_t], results, aliases={0: 0}, agree=[_matrix_dims(a)],
                                  lower=not lower)
    else:
        factor_t, info = lapack("potrf", dtype, [a_t], results, aliases={0: 0}, agree=[_matrix_dims(a)],
                                uplo="U" if lower else "L")
    return _triangle(_mT(factor_t), lower), _info_ok(info)


def _getrf(ctx, a):
    """LU factors in one matrix, 0-based pivots (int32) and LAPACK's info (> 0 where
    U has an exact zero on its diagonal)."""
    dtype = value_dtype(a)
    dims = shape_of(a)
    k = dim_min(dims[-2], dims[-1])
    results = [(dims, dtype), ([*dims[:-2], k], "int32"), (dims[:-2], "int32")]
    if ctx.on_gpu:
        lu, pivots, info = cusolver("getrf", [a], results, aliases={0: 0})
    else:
        lu, pivots, info = lapack("getrf", dtype, [a], results, aliases={0: 0})
    return lu, hlo.subtract(pivots, full_like(pivots, 1)), info


def _lu_solve_augmented(ctx, a, b):
    """Solve a x = b by eliminating [a | b]: LAPACK's row swaps and multipliers act on
    b's columns as on a's, so the right block ends up as L^-1 P^T b and no
    permutation is ever built. Returns x and whether a was nonsingular."""
    rank = len(static_shape(a.type))
    n = dim_size(a, rank - 1)
    width = dim_size(b, rank - 1)
    lu, _, info = _getrf(ctx, hlo.concatenate([a, b], rank - 1))
    u = slice_axis(lu, rank - 1, 0, n)
    y = slice_axis(lu, rank - 1, n, dim_add(n, width))
    return _solve_triangular(ctx, u, y, lower=False), _info_ok(info)


def _pivot_permutation(pivots, m) -> ir.Value:
    """LAPACK's row interchanges as the permutation `perm` with a[perm] == L @ U
    (int64, shape (*batch, m)): the swaps applied one after another to arange(m)."""
    batch = list(shape_of(pivots)[:-1])
    axis = len(batch)
    k = dim_size(pivots, axis)
    dims = [*batch, m]
    pivots = convert(pivots, "int64")

    def cond(values):
        return compare(values[0], dim_value(k), "LT")

    def body(values):
        i, perm = values
        steps = iota([*batch, k], axis, "int64")
        at_step = compare(steps, broadcast_in_dim(i, [*batch, k], []), "EQ")
        target = _sum(select(at_step, pivots, full_like(pivots, 0)), [axis])  # pivots[..., i]
        positions = iota(dims, axis, "int64")
        at_i = compare(positions, broadcast_in_dim(i, dims, []), "EQ")
        at_target = compare(positions, broadcast_in_dim(target, dims, range(axis)), "EQ")
        from_i = _sum(select(at_i, perm, full_like(perm, 0)), [axis])
        from_target = _sum(select(at_target, perm, full_like(perm, 0)), [axis])
        swapped = select(at_i, broadcast_in_dim(from_target, dims, range(axis)),
                         select(at_target, broadcast_in_dim(from_i, dims, range(axis)), perm))
        return [hlo.add(i, full_like(i, 1)), swapped]

    start = [full(0, (), "int64"), iota(dims, axis, "int64")]
    return while_loop(start, cond, body)[1]


def _inverse_permutation(perm) -> ir.Value:
    """argsort of a permutation: inv[perm[i]] = i."""
    dims = shape_of(perm)
    axis = len(dims) - 1
    expanded = [*dims, dims[-1]]
    # one[..., i, j] = perm[..., i] == j ; inv[..., j] = sum_i i * one[..., i, j]
    onehot = compare(broadcast_in_dim(perm, expanded, range(axis + 1)), iota(expanded, axis + 1, "int64"), "EQ")
    rows = iota(expanded, axis, "int64")
    return _sum(select(onehot, rows, full_like(rows, 0)), [axis])


@linalg_rule(Cholesky)
def lower_cholesky(ctx, node, batch_ndim, x):
    [x], _ = _in_precision(node, x)
    # PyTensor's perform returns an empty input as it is, square or not.
    empty = _dims_differ(dim_product(_matrix_dims(x)), 0)
    _require(ctx, [_matrix_dims(x)], ValueError, "Input array is expected to be square",
             unless=hlo.not_(empty) if not isinstance(empty, bool) else not empty)
    factor, ok = _potrf(ctx, x, core_op(node).lower)
    return _declared(node, _nan_unless(ok, factor), 0)


@register_lowering("pymc.distributions.multivariate.PosDefMatrix")
def lower_pos_def_matrix(ctx, node, x):
    """PyMC's positive-definiteness test (in LKJCorr's and Wishart's logp): whether
    `scipy.linalg.cholesky(x)` succeeds. That reads x's upper triangle, and its
    `check_finite` raises for a NaN or an infinity anywhere in x, which perform passes on."""
    x = convert(x, np.promote_types(node.inputs[0].type.dtype, np.float32).name)  # scipy's precision
    _require(ctx, [_matrix_dims(x)], ValueError, "Input array is expected to be square")
    ctx.runtime_check(hlo.not_(_all_finite(x)), ValueError, "array must not contain infs or NaNs")
    _, ok = _potrf(ctx, x, lower=False)
    return ok


@linalg_rule(LUFactor)
def lower_lu_factor(ctx, node, batch_ndim, a):
    [a], _ = _in_precision(node, a)
    lu, pivots, info = _getrf(ctx, a)
    return _declared(node, _nan_unless(_info_ok(info), lu), 0), pivots


@linalg_rule(PivotToPermutations)
def lower_pivot_to_permutations(ctx, node, batch_ndim, pivots):
    perm = _pivot_permutation(pivots, dim_size(pivots, batch_ndim))
    return perm if core_op(node).inverse else _inverse_permutation(perm)


@linalg_rule(LU)
def lower_lu(ctx, node, batch_ndim, a):
    """scipy.linalg.lu: a = P @ L @ U with unit lower L; for an m x n matrix and
    k = min(m, n), P is m x m, L m x k and U k x n."""
    op = core_op(node)
    [a], dtype = _in_precision(node, a, out=len(node.outputs) - 1)
    *batch, m, n = shape_of(a)
    rank = batch_ndim + 2
    k = dim_min(m, n)
    [a] = _check_finite(ctx, [a], batch_ndim)
    lu, pivots, _ = _getrf(ctx, a)
    lower = hlo.add(slice_axis(_triangle(lu, True, -1), rank - 1, 0, k), identity_matrix([*batch, m, k], dtype))
    upper = slice_axis(_triangle(lu, False), rank - 2, 0, k)
    perm = _pivot_permutation(pivots, m)
    out_dtypes = [o.type.dtype for o in node.outputs]
    # P[r, c] = 1 where perm[c] == r, so (P @ L)[r] = L[inv[r]].
    square = [*batch, m, m]
    p_matrix = compare(iota(square, rank - 2, "int64"), _along(perm, square, rank - 1), "EQ")
    if op.permute_l:
        return convert(_matmul(convert(p_matrix, dtype), lower, batch_ndim), out_dtypes[0]), convert(upper, out_dtypes[1])
    first = convert(_inverse_permutation(perm), out_dtypes[0]) if op.p_indices else convert(p_matrix, out_dtypes[0])
    return first, convert(lower, out_dtypes[1]), convert(upper, out_dtypes[2])


# --- solves -----------------------------------------------------------------------


@linalg_rule(SolveTriangular)
def lower_solve_triangular(ctx, node, batch_ndim, a, b):
    op = core_op(node)
    (a, b), _ = _in_precision(node, a, b)
    b, back = _as_matrix(b, op.b_ndim)
    _require(ctx, [_matrix_dims(a)], ValueError, "expected square matrix")
    _require(ctx, [(_matrix_dims(a)[0], _matrix_dims(b)[0])], ValueError, "shapes of a and b are incompatible")
    x = _solve_triangular(ctx, a, b, lower=op.lower, unit=op.unit_diagonal)
    if not op.unit_diagonal:  # trtrs reports an exact zero on the diagonal: NaN
        diag = diagonal(a)
        singular = fold(compare(diag, full_like(diag, 0), "EQ"), [batch_ndim], hlo.or_, False)
        x = _nan_unless(hlo.not_(singular), x)
    return _declared(node, back(x), 0)


def _cho_solve(ctx, factor, b, lower: bool):
    """x with (L L^H) x = b for a lower factor L, (U^H U) x = b for an upper one."""
    first, second = ("NO_TRANSPOSE", "ADJOINT") if lower else ("ADJOINT", "NO_TRANSPOSE")
    y = _solve_triangular(ctx, factor, b, lower=lower, transpose=first)
    return _solve_triangular(ctx, factor, y, lower=lower, transpose=second)


@linalg_rule(CholeskySolve)
def lower_cholesky_solve(ctx, node, batch_ndim, c, b):
    """potrs: (c c^H) x = b with c lower, (c^H c) x = b with c upper."""
    op = core_op(node)
    (c, b), _ = _in_precision(node, c, b)
    b, back = _as_matrix(b, op.b_ndim)
    _require(ctx, [_matrix_dims(c)], ValueError, "The factored matrix c is not square.")
    _require(ctx, [(_matrix_dims(c)[1], _matrix_dims(b)[0])], ValueError, "incompatible dimensions")
    return _declared(node, back(_cho_solve(ctx, _triangle(c, op.lower), b, op.lower)), 0)


@linalg_rule(Solve)
def lower_solve(ctx, node, batch_ndim, a, b):
    """scipy.linalg.solve for each `assume_a`; a singular (or, for "pos", indefinite)
    a gives NaN, as PyTensor's perform does when scipy raises."""
    op = core_op(node)
    (a, b), _ = _in_precision(node, a, b)
    b, back = _as_matrix(b, op.b_ndim)
    _require(ctx, [_matrix_dims(a)], ValueError, "Expected square matrix")
    _require(ctx, [(_matrix_dims(a)[0], _matrix_dims(b)[0])], ValueError, "incompatible shapes of a and b")
    kind = op.assume_a
    if kind == "pos":
        factor, ok = _potrf(ctx, a, op.lower)
        x = _cho_solve(ctx, factor, b, op.lower)
    else:
        if kind in ("sym", "her"):
            a = _hermitian_from(a, op.lower, conjugate=kind == "her")
        elif kind == "tridiagonal":  # scipy reads the three diagonals only
            a = _triangle(_triangle(a, True, 1), False, -1)
        elif kind not in ("gen", "banded"):
            raise UnsupportedParameterError(node, f"assume_a={kind!r}", "not a scipy.linalg.solve option")
        x, ok = _lu_solve_augmented(ctx, a, b)
    return _declared(node, back(_nan_unless(ok, x)), 0)


@linalg_rule(MatrixInverse)
def lower_matrix_inverse(ctx, node, batch_ndim, x):
    [x], dtype = _in_precision(node, x, double=True)
    _require(ctx, [_matrix_dims(x)])
    inverse, ok = _lu_solve_augmented(ctx, x, identity_matrix(shape_of(x), dtype))
    [inverse] = _failed(ctx, ok, [inverse], "Singular matrix")
    return _declared(node, inverse, 0)


# --- determinants -----------------------------------------------------------------


def _lu_diagonal_and_parity(ctx, x, batch_ndim):
    """diag(U) of x's LU factors and whether the row swaps are an odd permutation."""
    lu, pivots, _ = _getrf(ctx, x)
    steps = iota(shape_of(pivots), batch_ndim, "int32")
    swaps = _sum(convert(compare(pivots, steps, "NE"), "int32"), [batch_ndim])
    odd = compare(hlo.and_(swaps, full_like(swaps, 1)), full_like(swaps, 1), "EQ")
    return diagonal(lu), odd


def _flip_if(odd, x):
    return select(odd, hlo.negate(x), x)


@linalg_rule(Det)
def lower_det(ctx, node, batch_ndim, x):
    [x], _ = _in_precision(node, x, double=True)
    _require(ctx, [_matrix_dims(x)])
    diag, odd = _lu_diagonal_and_parity(ctx, x, batch_ndim)
    return _declared(node, _flip_if(odd, fold(diag, [batch_ndim], hlo.multiply, 1)), 0)


@linalg_rule(SLogDet)
def lower_slogdet(ctx, node, batch_ndim, x):
    """numpy's slogdet: sign (a unit complex number for complex x, 0 when singular)
    and log|det|."""
    [x], _ = _in_precision(node, x, double=True)
    _require(ctx, [_matrix_dims(x)])
    diag, odd = _lu_diagonal_and_parity(ctx, x, batch_ndim)
    magnitude = hlo.abs(diag)
    log_abs = _sum(hlo.log(magnitude), [batch_ndim])
    if is_complex(diag):
        unit = divide(diag, hlo.complex(magnitude, full_like(magnitude, 0)))
        unit = select(compare(magnitude, full_like(magnitude, 0), "EQ"), full_like(diag, 0), unit)
    else:
        unit = hlo.sign(diag)
    sign = _flip_if(odd, fold(unit, [batch_ndim], hlo.multiply, 1))
    return _declared(node, sign, 0), _declared(node, log_abs, 1)


# --- eigen- and singular values ---------------------------------------------------


def _syevd(ctx, a, lower: bool, vectors: bool):
    dtype = value_dtype(a)
    dims = shape_of(a)
    results = [(dims, dtype), (dims[:-1], _real_dtype(dtype)), (dims[:-2], "int32")]
    if ctx.on_gpu:  # always computes vectors; algorithm 0: Jacobi up to 32 x 32, else syevd
        v, w, info = cusolver("syevd", [a], results, aliases={0: 0}, agree=[_matrix_dims(a)],
                              lower=lower, algorithm=0)
    else:
        routine = "heevd" if is_complex(a) else "syevd"
        v, w, info = lapack(routine, dtype, [a], results, aliases={0: 0}, agree=[_matrix_dims(a)],
                            mode="V" if vectors else "N", uplo="L" if lower else "U")
    return w, v, _info_ok(info)


@linalg_rule(Eigh)
def lower_eigh(ctx, node, batch_ndim, x):
    [x], _ = _in_precision(node, x, double=True)
    _require(ctx, [_matrix_dims(x)])
    w, v, ok = _syevd(ctx, x, core_op(node).UPLO == "L", vectors=True)
    w, v = _failed(ctx, ok, [w, v], "Eigenvalues did not converge")
    return _declared(node, w, 0), _declared(node, v, 1)


def _generalized_to_standard(ctx, a, b, lower):
    """scipy's eigh(a, b): with b = L L^H, the eigenvalues of L^-1 A L^-H; returns that
    matrix and L (eigenvectors of the pair are L^-H times the standard ones)."""
    a = _hermitian_from(a, lower, conjugate=True)
    factor, ok = _potrf(ctx, b, lower)
    if not lower:
        factor = _mH(factor)
    left = _solve_triangular(ctx, factor, a, lower=True)
    standard = _mH(_solve_triangular(ctx, factor, _mH(left), lower=True))
    return standard, factor, ok


@linalg_rule(Eigvalsh)
def lower_eigvalsh(ctx, node, batch_ndim, a, b=None):
    lower = core_op(node).lower
    _require(ctx, [_matrix_dims(a)], ValueError, 'expected square "a" matrix')
    if b is None:
        [a], _ = _in_precision(node, a)
        [a] = _check_finite(ctx, [a], batch_ndim)
        w, _, ok = _syevd(ctx, a, lower, vectors=False)
    else:
        (a, b), _ = _in_precision(node, a, b)
        _require(ctx, [_matrix_dims(b), (_matrix_dims(a)[0], _matrix_dims(b)[0])], ValueError,
                 "wrong b dimensions, should be the same as a's")
        a, b = _check_finite(ctx, [a, b], batch_ndim)
        standard, _, chol_ok = _generalized_to_standard(ctx, a, b, lower)
        w, _, ok = _syevd(ctx, standard, True, vectors=False)
        ok = hlo.and_(ok, chol_ok)
    [w] = _failed(ctx, ok, [w], "the eigenvalue problem did not converge or b is not positive definite")
    return _declared(node, w, 0)


def _fold_triangles(g, lower: bool):
    """tri0(g) + tri1(g).T: a gradient with respect to the triangle eigh reads."""
    return hlo.add(_triangle(g, lower), _mT(_triangle(g, not lower, 1 if lower else -1)))


@linalg_rule(EighGrad)
def lower_eigh_grad(ctx, node, batch_ndim, x, w, v, gw, gv):
    """g = v (diag(gw) + (C * F)^T) v^T with C = v^T gv, F[m, n] = 1 / (w[n] - w[m])
    off the diagonal: PyTensor's perform, as matrix products."""
    dtype = node.outputs[0].type.dtype
    w, v, gw, gv = (convert(t, dtype) for t in (w, v, gw, gv))
    dims = shape_of(v)
    rank = batch_ndim + 2
    wm = broadcast_in_dim(w, dims, [*range(batch_ndim), rank - 2])
    wn = broadcast_in_dim(w, dims, [*range(batch_ndim), rank - 1])
    rows, cols = _positions(dims)
    off = compare(rows, cols, "NE")
    f = select(off, divide(full_like(wm, 1), hlo.subtract(wn, wm)), full_like(wm, 0))
    c = _matmul(_mT(v), gv, batch_ndim)
    inner = hlo.add(select(off, full_like(f, 0), broadcast_in_dim(gw, dims, [*range(batch_ndim), rank - 1])),
                    _mT(hlo.multiply(c, f)))
    g = _matmul(_matmul(v, inner, batch_ndim), _mT(v), batch_ndim)
    return _fold_triangles(g, core_op(node).UPLO == "L")


@linalg_rule(EigvalshGrad)
def lower_eigvalsh_grad(ctx, node, batch_ndim, a, b, gw):
    """gA = v diag(gw) v^T, gB = -v diag(gw w) v^T with v the pair's eigenvectors."""
    lower = core_op(node).lower
    (a, b), dtype = _in_precision(node, a, b)
    gw = convert(gw, dtype)
    a, b = _check_finite(ctx, [a, b], batch_ndim)  # perform's scipy.linalg.eigh
    standard, factor, chol_ok = _generalized_to_standard(ctx, a, b, lower)
    w, u, ok = _syevd(ctx, standard, True, vectors=True)
    [u] = _failed(ctx, hlo.and_(ok, chol_ok), [u], "the eigenvalue problem did not converge or b is not positive definite")
    v = _solve_triangular(ctx, factor, u, lower=True, transpose="ADJOINT")
    dims = shape_of(v)
    columns = [*range(batch_ndim), batch_ndim + 1]

    def weighted(weights):
        return _matmul(hlo.multiply(v, broadcast_in_dim(weights, dims, columns)), _mT(v), batch_ndim)

    grad_a = weighted(gw)
    grad_b = hlo.negate(weighted(hlo.multiply(gw, convert(w, dtype))))
    return tuple(_declared(node, _fold_triangles(g, lower), i) for i, g in enumerate((grad_a, grad_b)))


def _svd_parts(ctx, x, mode: str):
    """s, u, vt and ok of x = u diag(s) vt; mode "A" full, "S" reduced, "N" values only.
    LAPACK's gesdd on the CPU, cuSOLVER's Jacobi gesvdj on CUDA (JAX's choice up to
    1024 x 1024; it also takes every shape, where cuSOLVER's gesvd wants m >= n)."""
    dtype = value_dtype(x)
    dims = shape_of(x)
    batch, (m, n) = list(dims[:-2]), dims[-2:]
    k = dim_min(m, n)
    u_cols, vt_rows = (m, n) if mode == "A" else (k, k)
    if ctx.on_gpu:  # v, not vt; U and V exist even for values only
        _, s, u, v, info = cusolver(
            "gesvdj", [x],
            [(dims, dtype), ([*batch, k], _real_dtype(dtype)), ([*batch, m, u_cols], dtype),
             ([*batch, n, vt_rows], dtype), (batch, "int32")],
            aliases={0: 0}, identity=(2, 3), full_matrices=mode == "A", compute_uv=mode != "N",
        )
        return s, u, _mH(v), _info_ok(info)
    _, s, u, vt, info = lapack(
        "gesdd", dtype, [x],
        [(dims, dtype), ([*batch, k], _real_dtype(dtype)), ([*batch, m, u_cols], dtype),
         ([*batch, vt_rows, n], dtype), (batch, "int32")],
        aliases={0: 0}, identity=(2, 3), mode=mode,
    )
    return s, u, vt, _info_ok(info)


@linalg_rule(SVD)
def lower_svd(ctx, node, batch_ndim, x):
    op = core_op(node)
    [x], _ = _in_precision(node, x, double=True)
    mode = "N" if not op.compute_uv else ("A" if op.full_matrices else "S")
    s, u, vt, ok = _svd_parts(ctx, x, mode)
    outs = [u, s, vt] if op.compute_uv else [s]
    outs = _failed(ctx, ok, outs, "SVD did not converge")
    return tuple(_declared(node, v, i) for i, v in enumerate(outs))


@linalg_rule(MatrixPinv)
def lower_matrix_pinv(ctx, node, batch_ndim, x):
    """numpy.linalg.pinv: reduced SVD (eigh when hermitian), singular values at most
    1e-15 times the largest dropped."""
    [x], dtype = _in_precision(node, x, double=True)
    rank = batch_ndim + 2
    if core_op(node).hermitian:
        w, u, ok = _syevd(ctx, x, True, vectors=True)
        s = hlo.abs(w)
        signs = convert(hlo.sign(w), dtype)
        vh = _mH(hlo.multiply(u, broadcast_in_dim(signs, shape_of(u), [*range(batch_ndim), rank - 1])))
    else:
        s, u, vh, ok = _svd_parts(ctx, x, "S")
    largest = fold(s, [batch_ndim], hlo.maximum, -np.inf)
    cutoff = hlo.multiply(broadcast_in_dim(largest, shape_of(s), range(batch_ndim)), full_like(s, 1e-15))
    kept = compare(s, cutoff, "GT")
    inv_s = select(kept, divide(full_like(s, 1), s), full_like(s, 0))
    scaled = hlo.multiply(_mH(u), broadcast_in_dim(convert(inv_s, dtype), shape_of(_mH(u)), [*range(batch_ndim), rank - 2]))
    pinv = _matmul(_mH(vh), scaled, batch_ndim)
    [pinv] = _failed(ctx, ok, [pinv], "SVD did not converge")
    return _declared(node, pinv, 0)


# --- least squares ----------------------------------------------------------------

# LAPACK's relative machine precision, dlamch("E"): half of numpy's finfo(float).eps.
_LAPACK_EPS = 2.0**-53


def _all_finite(x: ir.Value, axes=None) -> ir.Value:
    axes = range(len(static_shape(x.type))) if axes is None else axes
    finite = hlo.and_(hlo.is_finite(hlo.real(x)), hlo.is_finite(hlo.imag(x))) if is_complex(x) else hlo.is_finite(x)
    return fold(finite, axes, hlo.and_, True)


@register_lowering(Lstsq)
def lower_lstsq(ctx, node, a, b, rcond):
    """numpy.linalg.lstsq, with gelsd's rules on the SVD a = u diag(s) vt: singular
    values s <= r * max(s) count as zero, where r is rcond inside (0, 1) and 2^-53
    otherwise (a NaN rcond drops none); x = vt^T diag(1/s) u^T b over the others, and
    rank is their number. numpy computes in double whatever the inputs, and rounds to
    float32 when a and b both are: so here, before PyTensor's declared float64. A
    non-finite a raises numpy's LinAlgError (gelsd fails on it). Complex input is
    refused: PyTensor types x as float64.

    The residuals, squared column norms of b - a x = (I - u u^T) b (what gelsd reads
    off its rotated b), exist only where rank == n < m: elsewhere numpy returns an
    empty vector. That length is data, computed here and measured by the runtime
    before it specializes (`specialize.runtime_dims`), as for `unique`; a variable
    rcond is a scalar that feeds a shape, so each value specializes anew.

    A 1-d b gives x as an (n, 1) matrix: numpy returns a vector, but PyTensor types x
    as a matrix and every Op after it reads one."""
    a_type, b_type = node.inputs[0].type, node.inputs[1].type
    if a_type.ndim != 2 or b_type.ndim not in (1, 2):
        raise UnsupportedParameterError(
            node, f"a.ndim={a_type.ndim}, b.ndim={b_type.ndim}",
            "numpy.linalg.lstsq takes a matrix and a vector or matrix",
        )
    dtypes = [np.dtype(t.dtype) for t in (a_type, b_type)]
    if np.float16 in dtypes:
        raise UnsupportedParameterError(node, "float16 input", "numpy.linalg.lstsq refuses float16")
    if any(d.kind == "c" for d in dtypes):
        raise UnsupportedParameterError(
            node, "complex input", "PyTensor types output 0 as float64 but its values are complex128"
        )
    rounded = "float32" if all(d == np.float32 for d in dtypes) else "float64"
    a, b = convert(a, "float64"), convert(b, "float64")
    b, _ = _as_matrix(b, b_type.ndim)
    m, n = _matrix_dims(a)
    nrhs = _matrix_dims(b)[1]
    _require(ctx, [(m, _matrix_dims(b)[0])], message="Incompatible dimensions")
    b = _fit(b, 0, m)
    finite = _all_finite(a)
    # gesdd never sees a non-finite matrix: the result is an error (or NaN) anyway.
    s, u, vt, ok = _svd_parts(ctx, select(broadcast_in_dim(finite, shape_of(a), []), a, full_like(a, 0)), "S")

    rcond = convert(rcond, "float64")
    outside = hlo.or_(compare(rcond, full_like(rcond, 0.0), "LE"), compare(rcond, full_like(rcond, 1.0), "GE"))
    rcond = select(outside, full_like(rcond, _LAPACK_EPS), rcond)
    cutoff = hlo.multiply(rcond, fold(s, [0], hlo.maximum, 0.0))
    kept = hlo.not_(compare(s, broadcast_in_dim(cutoff, shape_of(s), []), "LE"))
    rank = _sum(convert(kept, "int32"), [0])

    c = _matmul(_mT(u), b, 0)
    dims = shape_of(c)
    divided = divide(c, broadcast_in_dim(s, dims, [0]))
    x = _matmul(_mT(vt), select(broadcast_in_dim(kept, dims, [0]), divided, full_like(c, 0)), 0)
    r = hlo.subtract(b, _matmul(u, c, 0))
    residuals = _sum(hlo.multiply(r, r), [0])
    # gelsd on a non-finite b, as numpy returns it: NaN in the columns holding one. With
    # an infinity and no NaN, max|b| is inf and gelsd scales b by bignum / inf = 0:
    # every x is NaN, and the finite columns' residuals 0 (gelsd scales x back, not the
    # rows the residuals are read from).
    bad = hlo.not_(_all_finite(b, [0]))
    inf_only = hlo.and_(any_true(bad), hlo.not_(any_true(is_nan(b))))
    nan_x = hlo.or_(bad, broadcast_in_dim(inf_only, shape_of(bad), []))
    x = select(broadcast_in_dim(nan_x, shape_of(x), [1]), full_like(x, np.nan), x)
    residuals = select(bad, full_like(residuals, np.nan),
                       select(broadcast_in_dim(inf_only, shape_of(bad), []), full_like(residuals, 0), residuals))

    x, residuals, s = _failed(ctx, hlo.and_(ok, finite), [x, residuals, s],
                              "SVD did not converge in Linear Least Squares")
    if isinstance(m, int) and isinstance(n, int) and m <= n:
        length = 0
    else:
        full_rank = compare(rank, convert(dim_value(n), "int32"), "EQ")
        exists = hlo.and_(full_rank, compare(dim_value(m), dim_value(n), "GT"))
        length = select(exists, dim_value(nrhs), dim_value(0))
    # The barrier keeps MHLO's canonicalizer from folding the slice of a constant (m = 0)
    # into a constant of the slice's `?` type, which fails to verify.
    residuals = slice_axis(hlo.optimization_barrier([residuals]), 0, 0, length)
    outs = [convert(x, rounded), convert(residuals, rounded), rank, convert(s, rounded)]
    return tuple(_declared(node, v, i) for i, v in enumerate(outs))


def _unpack_conjugate_pairs(w: ir.Value, vr: ir.Value) -> ir.Value:
    """Real geev's eigenvectors as complex columns. A complex pair of eigenvalues comes
    as two neighbours, the one with the positive imaginary part first; its vector is
    column j + i column j+1, and its conjugate's is column j - i column j+1."""
    rank = len(static_shape(vr.type))
    dims = shape_of(vr)
    along_columns = [*range(rank - 2), rank - 1]
    imag = broadcast_in_dim(hlo.imag(w), dims, along_columns)
    zero = full_like(imag, 0)
    first, second = compare(imag, zero, "GT"), compare(imag, zero, "LT")
    real = select(second, _shifted(vr, rank - 1, -1), vr)
    imaginary = select(first, _shifted(vr, rank - 1, 1), select(second, hlo.negate(vr), full_like(vr, 0)))
    return hlo.complex(real, imaginary)


@linalg_rule(Eig)
def lower_eig(ctx, node, batch_ndim, x):
    """numpy.linalg.eig: geev's eigenvalues and unit-norm right eigenvectors, complex."""
    # In double precision, as numpy.linalg; a real matrix goes to the real geev (complex
    # results built from wr, wi).
    dtype = "complex128" if is_complex(x) else "float64"
    x = convert(x, dtype)
    _require(ctx, [_matrix_dims(x)])
    # numpy refuses a non-finite matrix before geev runs (geev would not converge on it)
    [x] = _failed(ctx, _all_finite(x, [batch_ndim, batch_ndim + 1]), [x], "Array must not contain infs or NaNs")
    dims = shape_of(x)
    batch = list(dims[:-2])
    complex_dtype = _complex_dtype(dtype)
    vectors = [(dims, complex_dtype), (dims, complex_dtype), (batch, "int32")]
    if ctx.on_gpu:  # cuSOLVER's Xgeev: vectors packed as real geev's for real x
        _, w, _, vr, info = cusolver("geev", [x], [(dims, dtype), (dims[:-1], complex_dtype), (dims, dtype),
                                                   (dims, dtype), (batch, "int32")],
                                     agree=[_matrix_dims(x)], left=False, right=True)
        if not is_complex(x):
            vr = _unpack_conjugate_pairs(w, vr)
    elif is_complex(x):
        w, _, vr, info = lapack("geev", dtype, [x], [(dims[:-1], dtype), *vectors],
                                agree=[_matrix_dims(x)], compute_left="N", compute_right="V")
    else:
        wr, wi, _, vr, info = lapack("geev", dtype, [x], [(dims[:-1], dtype), (dims[:-1], dtype), *vectors],
                                     agree=[_matrix_dims(x)], compute_left="N", compute_right="V")
        w = hlo.complex(wr, wi)
    w, vr = _failed(ctx, _info_ok(info), [w, vr], "Eigenvalues did not converge")
    return _declared(node, w, 0), _declared(node, vr, 1)


# --- QR ---------------------------------------------------------------------------


@linalg_rule(QR)
def lower_qr(ctx, node, batch_ndim, x):
    """scipy.linalg.qr: geqrf (geqp3 with pivoting), Q from orgqr/ungqr."""
    op = core_op(node)
    [x], dtype = _in_precision(node, x)
    dims = shape_of(x)
    batch, (m, n) = list(dims[:-2]), dims[-2:]
    k = dim_min(m, n)
    rank = batch_ndim + 2
    if op.pivoting:
        jpvt = full(0, [*batch, n], "int32")
        _cpu_only(ctx, node, "pivoted QR (geqp3)")
        qr, jpvt, tau = lapack("geqp3", dtype, [x, jpvt], [(dims, dtype), ([*batch, n], "int32"),
                                                           ([*batch, k], dtype)], aliases={0: 0, 1: 1})
        extra = [hlo.subtract(jpvt, full_like(jpvt, 1))]
    else:
        results = [(dims, dtype), ([*batch, k], dtype)]
        if ctx.on_gpu:
            qr, tau = cusolver("geqrf", [x], results, aliases={0: 0})
        else:
            qr, tau = lapack("geqrf", dtype, [x], results, aliases={0: 0})
        extra = []
    r_full = _triangle(qr, False)
    economic = op.mode in ("economic", "raw")
    r = slice_axis(r_full, rank - 2, 0, k) if economic else r_full
    if op.mode == "r":
        outs = [r]
    elif op.mode == "raw":
        outs = [qr, tau, r]
    else:
        # Q's first columns: the reflectors stored below qr's diagonal, k columns (m
        # for the full Q, padded with zero columns that orgqr turns into identity ones).
        cols = k if op.mode == "economic" else m
        basis = slice_axis(qr, rank - 1, 0, dim_min(n, cols))
        if op.mode == "full":
            pad = dim_sub(m, dim_min(n, m))
            basis = hlo.concatenate([basis, full(0, [*batch, m, pad], dtype)], rank - 1)
        results = [([*batch, m, cols], dtype)]
        if ctx.on_gpu:
            [q] = cusolver("orgqr", [basis, tau], results, aliases={0: 0}, identity=(0,))
        else:
            routine = "ungqr" if is_complex(x) else "orgqr"
            [q] = lapack(routine, dtype, [basis, tau], results, aliases={0: 0}, identity=(0,))
        outs = [q, r]
    outs = [*outs, *extra]
    return tuple(_declared(node, v, i) for i, v in enumerate(outs))


# --- block diagonal ---------------------------------------------------------------


@linalg_rule(BlockDiagonal)
def lower_block_diagonal(ctx, node, batch_ndim, *blocks):
    """scipy.linalg.block_diag: each block padded with zeros to its place."""
    dtype = node.outputs[0].type.dtype
    rank = batch_ndim + 2
    blocks = [convert(b, dtype) for b in blocks]
    batch = list(shape_of(blocks[0]))[:batch_ndim]
    widths = [dim_size(b, rank - 1) for b in blocks]
    rows = []
    for i, block in enumerate(blocks):
        height = dim_size(block, rank - 2)
        parts = [full(0, [*batch, height, w], dtype) if j != i else block for j, w in enumerate(widths)]
        rows.append(hlo.concatenate(parts, rank - 1))
    return hlo.concatenate(rows, rank - 2)


# --- matrix exponential -----------------------------------------------------------

# Padé coefficients and the 1-norm below which the approximant is accurate to unit
# roundoff (Higham 2005): degree 13 in double precision, 7 in single.
_PADE = {
    13: ((64764752532480000, 32382376266240000, 7771770303897600, 1187353796428800, 129060195264000,
          10559470521600, 670442572800, 33522128640, 1323241920, 40840800, 960960, 16380, 182, 1),
         5.371920351148152),
    7: ((17297280, 8648640, 1995840, 277200, 25200, 1512, 56, 1), 3.925724783138660),
}


@linalg_rule(Expm)
def lower_expm(ctx, node, batch_ndim, a):
    """scipy.linalg.expm by scaling and squaring: a / 2^s has 1-norm below the Padé
    degree's bound, r = q(a)^-1 p(a), then s squarings (s per batch entry; entries
    with fewer squarings keep their result)."""
    [a], dtype = _in_precision(node, a)
    a = _square(ctx, a)
    real = _real_dtype(dtype)
    coeffs, bound = _PADE[13 if real == "float64" else 7]
    dims = shape_of(a)
    rank = batch_ndim + 2
    norm = _max_abs_sum(a, rank - 2, batch_ndim)
    log2 = divide(hlo.log(divide(norm, full_like(norm, bound))), full_like(norm, np.log(2.0)))
    # At most 1,000 squarings (a 1-norm of 2^1000): beyond, or for non-finite a, NaN.
    squarings = hlo.clamp(full_like(norm, 0), hlo.ceil(log2), full_like(norm, 1000))
    squarings = select(is_nan(squarings), full_like(norm, 1000), squarings)
    scale = convert(hlo.power(full_like(norm, 2), hlo.negate(squarings)), dtype)
    a = hlo.multiply(a, broadcast_in_dim(scale, dims, range(batch_ndim)))

    def matmul(x, y):
        return _matmul(x, y, batch_ndim)

    def combine(terms):  # sum of c * power over (c, power) pairs
        total = None
        for c, power in terms:
            term = hlo.multiply(full_like(power, float(c)), power)
            total = term if total is None else hlo.add(total, term)
        return total

    eye = identity_matrix(dims, dtype)
    a2 = matmul(a, a)
    a4 = matmul(a2, a2)
    a6 = matmul(a4, a2)
    b = coeffs
    if len(b) == 14:
        u = matmul(a, hlo.add(matmul(a6, combine([(b[13], a6), (b[11], a4), (b[9], a2)])),
                              combine([(b[7], a6), (b[5], a4), (b[3], a2), (b[1], eye)])))
        v = hlo.add(matmul(a6, combine([(b[12], a6), (b[10], a4), (b[8], a2)])),
                    combine([(b[6], a6), (b[4], a4), (b[2], a2), (b[0], eye)]))
    else:
        u = matmul(a, combine([(b[7], a6), (b[5], a4), (b[3], a2), (b[1], eye)]))
        v = combine([(b[6], a6), (b[4], a4), (b[2], a2), (b[0], eye)])
    r, _ = _lu_solve_augmented(ctx, hlo.subtract(v, u), hlo.add(v, u))
    most = fold(squarings, range(batch_ndim), hlo.maximum, 0.0)

    def cond(values):
        return compare(values[0], most, "LT")

    def body(values):
        i, r = values
        more = compare(squarings, broadcast_in_dim(i, shape_of(squarings), []), "GT")
        r = select(broadcast_in_dim(more, dims, range(batch_ndim)), matmul(r, r), r)
        return [hlo.add(i, full_like(i, 1)), r]

    r = while_loop([full(0.0, (), real), r], cond, body)[1]
    finite = compare(squarings, full_like(squarings, 1000), "LT")
    return _declared(node, _nan_unless(finite, r), 0)


# --- Schur form and the Sylvester equation ----------------------------------------


@linalg_rule(Schur)
def lower_schur(ctx, node, batch_ndim, a):
    """scipy.linalg.schur with gees: a = Z T Z^H; NaN for a non-finite a or when gees
    fails, as PyTensor's perform. With `sort`, the executable runs perform itself on the
    host (see `_PerformOnHost`): jaxlib's gees selects no eigenvalues, and a reordered
    form is unique only up to the phase of each Schur vector (and a turn within each
    real 2x2 block), so only LAPACK's own trsen gives perform's values."""
    _cpu_only(ctx, node, "Schur decomposition (gees)")
    op = core_op(node)
    dtype = _lapack_dtype(node.outputs[0].type.dtype)
    a = _square(ctx, convert(a, dtype), ValueError, "expected square matrix")
    dims = shape_of(a)
    if op.sort is not None:
        t, z = ctx.host_call(_PerformOnHost.of(op, dtype), [a], [(dims, dtype), (dims, dtype)])
        return _declared(node, t, 0), _declared(node, z, 1)
    batch = list(dims[:-2])
    values = [(dims[:-1], dtype)] if is_complex(a) else [(dims[:-1], dtype)] * 2
    t, z, *_, info = lapack("gees", dtype, [a], [(dims, dtype), (dims, dtype), *values, (batch, "int32"),
                                                 (batch, "int32")], aliases={0: 0}, agree=[_matrix_dims(a)],
                            mode="V", sort="N")
    finite = fold(compare(hlo.abs(a), full_like(hlo.abs(a), np.inf), "LT"), [batch_ndim, batch_ndim + 1],
                  hlo.and_, True)
    ok = hlo.and_(_info_ok(info), finite)
    return tuple(_declared(node, _nan_unless(ok, v), i) for i, v in enumerate((t, z)))


_QZ_SHAPES = "Array dimensions must be square and agree"  # scipy.linalg.qz's words


@linalg_rule(QZ)
def lower_qz(ctx, node, batch_ndim, a, b):
    """scipy's gges, then tgsen with `sort`, run on the host by the executable (see
    `_PerformOnHost`): jaxlib registers no gges, and the generalized Schur form is not
    unique, so only LAPACK's own algorithm gives the values PyTensor's perform gives.
    Matrices that are not square or do not agree raise scipy.linalg.qz's ValueError."""
    op = core_op(node)
    dtype = _lapack_dtype(node.outputs[0].type.dtype)
    a, b = convert(a, dtype), convert(b, dtype)
    (m, n), (p, q) = _matrix_dims(a), _matrix_dims(b)
    _require(ctx, [(m, n), (p, q), (m, p)], ValueError, _QZ_SHAPES)
    dims, b_dims = shape_of(a), shape_of(b)
    results = [(dims, dtype), (b_dims, dtype)]
    if op.return_eigenvalues:
        results += [(dims[:-1], _complex_dtype(dtype)), (dims[:-1], dtype)]
    results += [(dims, dtype), (dims, dtype)]
    values = ctx.host_call(_PerformOnHost.of(op, dtype), [a, b], results)
    return tuple(_declared(node, v, i) for i, v in enumerate(values))


class _PerformOnHost:
    """PyTensor's perform of a LAPACK Op (a sorted `Schur`; QZ's, restated, is
    `_QZOnHost`) over a batch of matrices, as a host callback.

    Called with read-only arrays of the LAPACK dtype (the rules convert them); returns
    the outputs in that dtype, row-major, each batch entry perform's values to the bit.
    QZ pairs that do not fit (the rule raises for them after the call) give NaN, and
    0 x 0 matrices empty results, where gges would refuse them with an f2py error.
    """

    @classmethod
    @functools.cache
    def of(cls, op: QZ | Schur, dtype: str) -> "_PerformOnHost":
        # One instance per Op and dtype: equal modules then share an executable.
        return (_QZOnHost if isinstance(op, QZ) else cls)(op, dtype)

    def __init__(self, op: QZ | Schur, dtype: str):
        # The inputs are XLA's buffers: never let LAPACK overwrite them.
        props = op._props_dict()
        self.op = type(op)(**{k: False if k.startswith("overwrite_") else v for k, v in props.items()})
        self.dtype = dtype
        arity = 2 if isinstance(op, QZ) else 1
        self.core = self.op.make_node(*(pt.matrix(dtype=dtype) for _ in range(arity)))

    def __repr__(self) -> str:
        return f"{self.op} on {self.dtype}"

    def __call__(self, *matrices: np.ndarray):
        outputs = self._outputs(*matrices)
        if not self._fit(*matrices, outputs=outputs):
            return outputs
        storage = [[None] for _ in outputs]
        for i in np.ndindex(*matrices[0].shape[:-2]):
            self.op.perform(self.core, [m[i] for m in matrices], storage)
            for out, cell in zip(outputs, storage):
                out[i] = cell[0]
        return outputs

    def _outputs(self, *matrices: np.ndarray) -> tuple[np.ndarray, ...]:
        shapes = self._shapes(*matrices)
        return tuple(np.empty(shape, out.type.dtype) for shape, out in zip(shapes, self.core.outputs, strict=True))

    def _shapes(self, a: np.ndarray) -> list[tuple[int, ...]]:
        return [a.shape, a.shape]  # a sorted Schur's T and Z

    @staticmethod
    def _fit(a: np.ndarray, *others: np.ndarray, outputs) -> bool:
        """Whether every matrix is square and as large as the first; NaN outputs if not."""
        n = a.shape[-1]
        if all(m.shape[-2:] == (n, n) for m in (a, *others)):
            return True
        for out in outputs:
            out.fill(np.nan)
        return False


class _QZOnHost(_PerformOnHost):
    """QZ's perform restated for a whole batch: per entry the LAPACK calls perform makes,
    with the arguments it passes (gges unsorted with the workspace gges asks for; then,
    with `sort`, tgsen on perform's own selection of the eigenvalues), so every entry is
    perform's to the bit. What perform repeats per call is done once: the LAPACK lookup,
    the workspace query (its answer depends on n alone), and the selection, for the whole
    batch at once."""

    def __init__(self, op: QZ, dtype: str):
        super().__init__(op, dtype)
        (self.gges,) = scipy_linalg.get_lapack_funcs(("gges",), dtype=np.dtype(dtype))
        (self.tgsen,) = scipy_linalg.get_lapack_funcs(("tgsen",), dtype=np.dtype(dtype))
        self.select = op.make_sort_function()[0] if op.sort is not None else None
        self.imaginary_unit = np.complex64(1j) if self.gges.typecode == "s" else 1j

    def _shapes(self, a: np.ndarray, b: np.ndarray) -> list[tuple[int, ...]]:
        eigenvalues = [a.shape[:-1]] * 2 if self.op.return_eigenvalues else []
        return [a.shape, b.shape, *eigenvalues, a.shape, a.shape]

    @functools.cache
    def _gges_lwork(self, n: int) -> int:
        *_, work, _info = self.gges(_no_sort, np.zeros((n, n), self.dtype), np.zeros((n, n), self.dtype),
                                    lwork=-1, sort_t=0)
        return int(work[0].real)

    def _alpha_beta(self, values):
        if self.gges.typecode in "sd":
            alphar, alphai, beta = values
            return alphar + self.imaginary_unit * alphai, beta
        return values

    def __call__(self, a: np.ndarray, b: np.ndarray):
        outputs = self._outputs(a, b)
        n = a.shape[-1]
        if not self._fit(a, b, outputs=outputs) or n == 0:
            return outputs
        entries = list(np.ndindex(*a.shape[:-2]))
        lwork = self._gges_lwork(n)
        forms = []  # per entry: [aa, bb, eigenvalues as LAPACK returns them, q, z, info]
        for i in entries:
            aa, bb, _sdim, *values, q, z, _work, info = self.gges(_no_sort, a[i], b[i], lwork=lwork, sort_t=0)
            forms.append([aa, bb, values, q, z, info])
        if self.select is not None:
            self._reorder([form for form in forms if form[-1] == 0], n)
        for i, (aa, bb, values, q, z, info) in zip(entries, forms):
            if info != 0:
                for out in outputs:
                    out[i] = np.nan
                continue
            eigenvalues = self._alpha_beta(values) if self.op.return_eigenvalues else ()
            for out, result in zip(outputs, (aa, bb, *eigenvalues, q, z), strict=True):
                out[i] = result
        return outputs

    def _reorder(self, forms: list, n: int) -> None:
        """tgsen on each generalized Schur form, in place, with perform's selection. The
        selection is computed for all forms at once: it is elementwise (a division, abs,
        a comparison), and numpy's loops give each element the same bits in an array of
        any length (abs of complex runs one SIMD algorithm, tail included)."""
        if not forms:
            return
        if len(forms) == 1:  # one pencil (an unbatched QZ, a DARE): views, not copies
            eigenvalues = [v[np.newaxis] for v in forms[0][2]]
        else:
            eigenvalues = [np.stack(v) for v in zip(*(form[2] for form in forms))]
        chosen = self.select(*self._alpha_beta(eigenvalues))
        for form, picked in zip(forms, chosen):
            aa, bb, _values, q, z, _info = form
            form[:] = self._tgsen(picked, aa, bb, q, z, n)

    def _tgsen(self, select, aa, bb, q, z, n: int) -> list:
        lwork = 4 * n + 16 if self.gges.typecode in "sd" else 1  # perform's (complex: none needed)
        aa, bb, *values, q, z, _m, _pl, _pr, _dif, info = self.tgsen(
            select, aa, bb, q, z, ijob=0, lwork=lwork, liwork=1,
            overwrite_a=True, overwrite_b=True, overwrite_q=True, overwrite_z=True,
        )
        return [aa, bb, values, q, z, info]


def _no_sort(alpha, beta):
    """gges' selection argument where it sorts nothing (sort_t = 0 never calls it)."""
    return None


@linalg_rule(TRSYL)
def lower_trsyl(ctx, node, batch_ndim, a, b, c):
    """a x + x b = c for b quasi-upper-triangular (a real or complex Schur form), as
    LAPACK's trsyl: column k of x solves, together with column k + 1,

        [[a + b[k,k] I,   b[k+1,k] I    ],  [x_k    ]   [c_k     - x b[:, k]    ]
         [b[k,k+1] I,     a + b[k+1,k+1]]]  [x_k+1  ] = [c_k+1   - x b[:, k+1]  ]

    with x's unsolved columns zero. The pair is exact where b has a 2x2 block at k,
    and block triangular otherwise, so x_k is right either way and one loop of n
    steps serves every batch entry. b gets one extra row and column (zero coupling,
    a diagonal that keeps the last pair nonsingular)."""
    dtype = _lapack_dtype(node.outputs[0].type.dtype)
    a, b, c = (convert(v, dtype) for v in (a, b, c))
    rank = batch_ndim + 2
    batch = list(shape_of(c))[:batch_ndim]
    m, n = dim_size(a, rank - 1), dim_size(b, rank - 1)
    n1 = dim_add(n, 1)
    # 1 + the largest row sum of |a|: a + that * I is nonsingular.
    corner = _max_abs_sum(a, rank - 1, batch_ndim)
    corner = convert(hlo.add(corner, full_like(corner, 1)), dtype)
    b_pad = hlo.concatenate([b, full(0, [*batch, n, 1], dtype)], rank - 1)
    last_row = hlo.concatenate([full(0, [*batch, 1, n], dtype), reshape(corner, [*batch, 1, 1])], rank - 1)
    b_pad = hlo.concatenate([b_pad, last_row], rank - 2)
    c_pad = hlo.concatenate([c, full(0, [*batch, m, 1], dtype)], rank - 1)
    eye = identity_matrix([*batch, m, m], dtype)

    def at(x, axis, k):
        """Where x's index along `axis` is the 0-d i64 k."""
        return compare(iota(shape_of(x), axis, "int64"), broadcast_in_dim(k, shape_of(x), []), "EQ")

    def column(x, k):  # x[..., :, k], as a one-hot sum (no dynamic slices)
        return _sum(select(at(x, rank - 1, k), x, full_like(x, 0)), [rank - 1])

    def entry(i, j):  # b_pad[..., i, j], shape (*batch,)
        hit = hlo.and_(at(b_pad, rank - 2, i), at(b_pad, rank - 1, j))
        return _sum(select(hit, b_pad, full_like(b_pad, 0)), [rank - 2, rank - 1])

    def scaled_eye(s):
        return hlo.multiply(eye, broadcast_in_dim(s, [*batch, m, m], range(batch_ndim)))

    def cond(values):
        return compare(values[0], dim_value(n), "LT")

    def body(values):
        k, x = values
        k1 = hlo.add(k, full_like(k, 1))
        xb = _matmul(x, b_pad, batch_ndim)
        r0 = hlo.subtract(column(c_pad, k), column(xb, k))
        r1 = hlo.subtract(column(c_pad, k1), column(xb, k1))
        top = hlo.concatenate([hlo.add(a, scaled_eye(entry(k, k))), scaled_eye(entry(k1, k))], rank - 1)
        bottom = hlo.concatenate([scaled_eye(entry(k, k1)), hlo.add(a, scaled_eye(entry(k1, k1)))], rank - 1)
        system = hlo.concatenate([top, bottom], rank - 2)
        two_m = dim_add(m, m)
        rhs = reshape(hlo.concatenate([r0, r1], batch_ndim), [*batch, two_m, 1])
        solved, _ = _lu_solve_augmented(ctx, system, rhs)
        x_k = slice_axis(reshape(solved, [*batch, two_m]), batch_ndim, 0, m)
        x = select(at(x, rank - 1, k), broadcast_in_dim(x_k, shape_of(x), [*range(batch_ndim), rank - 2]), x)
        return [k1, x]

    x = while_loop([full(0, (), "int64"), full(0, [*batch, m, n1], dtype)], cond, body)[1]
    return _declared(node, slice_axis(x, rank - 1, 0, n), 0)


# --- tridiagonal LU (LAPACK's gttrf and gttrs, as loops over rows) -----------------
#
# jaxlib registers no gttrf/gttrs. The loops below take LAPACK's steps in LAPACK's
# order, so the factors, pivots and solutions are scipy's. They work on rows-first
# copies (row, *batch[, rhs]), one row of every batch entry per step, padded with two
# zero rows on each side: the first and last rows need no special case (their
# neighbours in the padding are zeros that change nothing and are never returned).
# A loop reads only arrays it does not write, and carries the rows a step changes for
# the next: XLA then updates its buffers in place (reading and writing one buffer in
# a step cost a copy of it per step, O(n^2) in all).

_PAD = 2


def _rows_first(v, batch_ndim, total: Dim) -> ir.Value:
    """v (*batch, k[, rhs]) as (PAD + k + zeros, *batch[, rhs]) with `total` rows."""
    rank = len(static_shape(v.type))
    v = transpose(v, [batch_ndim, *range(batch_ndim), *range(batch_ndim + 1, rank)])
    dims = shape_of(v)
    back = dim_sub(dim_sub(total, _PAD), dims[0])
    zeros = [full(0, [k, *dims[1:]], value_dtype(v)) for k in (_PAD, back)]
    return hlo.concatenate([zeros[0], v, zeros[1]], 0)


def _from_rows(v, batch_ndim, length: Dim) -> ir.Value:
    """The inverse of `_rows_first`: `length` rows after the padding, batch dims first."""
    rank = len(static_shape(v.type))
    v = slice_axis(v, 0, _PAD, dim_add(length, _PAD))
    return transpose(v, [*range(1, batch_ndim + 1), 0, *range(batch_ndim + 1, rank)])


def _row(v, i: Dim, offset: int = 0) -> ir.Value:
    """Padded row i + offset of every batch entry, shape (1, *batch[, rhs])."""
    return dynamic_index(v, [0], [dim_value(dim_add(i, _PAD + offset))])


def _put_row(v, row: ir.Value, i: Dim, offset: int = 0) -> ir.Value:
    start = dim_value(dim_add(i, _PAD + offset))
    return hlo.dynamic_update_slice(v, row, [start] + [dim_value(0)] * (len(static_shape(v.type)) - 1))


def _rows_loop(count: Dim, values, step, downward: bool = False):
    """step(i, values) -> values for i = 0 .. count - 1 (or back down to 0); returns
    the last i + 1 (or i - 1) and the values."""
    start = hlo.subtract(dim_value(count), dim_value(1)) if downward else dim_value(0)

    def cond(state):
        i = state[0]
        return compare(i, full_like(i, 0), "GE") if downward else compare(i, dim_value(count), "LT")

    def body(state):
        i, *rest = state
        return [hlo.add(i, full_like(i, -1 if downward else 1)), *step(i, rest)]

    return while_loop([start, *values], cond, body)


def _cabs1(x: ir.Value) -> ir.Value:
    """LAPACK's pivoting magnitude: |x|, or |re| + |im| for complex x."""
    if is_complex(x):
        return hlo.add(hlo.abs(hlo.real(x)), hlo.abs(hlo.imag(x)))
    return hlo.abs(x)


def _tridiagonal_dims(ctx, batch_ndim, d, dl, du, du2=None):
    """n and the checked lengths of the off-diagonals (scipy's f2py raises ValueError)."""
    n = dim_size(d, batch_ndim)
    off, off2 = dim_max(dim_sub(n, 1), 0), dim_max(dim_sub(n, 2), 0)
    pairs = [(dim_size(dl, batch_ndim), off), (dim_size(du, batch_ndim), off)]
    if du2 is not None:
        pairs.append((dim_size(du2, batch_ndim), off2))
    _require(ctx, pairs, ValueError, "the diagonals' lengths do not fit a tridiagonal matrix")
    return n, off, off2


@linalg_rule(LUFactorTridiagonal)
def lower_lu_factor_tridiagonal(ctx, node, batch_ndim, dl, d, du):
    """gttrf: LU of the tridiagonal matrix (dl, d, du) with partial pivoting, rows i
    and i + 1 swapped where |dl[i]| > |d[i]| (or either is NaN, as in LAPACK). U has
    the diagonals d, du, du2; L's multipliers replace dl; ipiv is 1-based, as scipy
    returns it. A singular matrix (LAPACK's info > 0) is factored all the same:
    PyTensor's perform ignores info. scipy's wrapper refuses n <= 2, computed here.

    Step i finishes row i of every output; d[i + 1] and du[i + 1], which it changes,
    are carried to step i + 1."""
    dtype = node.outputs[0].type.dtype
    dl, d, du = (convert(v, dtype) for v in (dl, d, du))
    n, off, off2 = _tridiagonal_dims(ctx, batch_ndim, d, dl, du)
    total = dim_add(n, 2 * _PAD)
    d, dl, du = (_rows_first(v, batch_ndim, total) for v in (d, dl, du))
    zero = dim_value(0)

    def step(i, values):
        d0, u0, d_out, dl_out, du_out, du2_out, piv = values
        d1, l, u1 = _row(d, i, 1), _row(dl, i), _row(du, i, 1)
        keep = compare(_cabs1(d0), _cabs1(l), "GE")

        def pick(kept, swapped):
            return select(keep, kept, swapped)

        nonzero = compare(d0, full_like(d0, 0), "NE")
        fact = divide(l, d0)  # no interchange: eliminate dl[i], unless d[i] == 0
        swap = divide(d0, l)  # interchange rows i and i + 1, then eliminate
        one_based = broadcast_in_dim(convert(hlo.add(i, full_like(i, 1)), "int32"), shape_of(keep), [])
        return [
            pick(select(nonzero, hlo.subtract(d1, hlo.multiply(fact, u0)), d1), hlo.subtract(u0, hlo.multiply(swap, d1))),
            pick(u1, hlo.negate(hlo.multiply(swap, u1))),
            _put_row(d_out, pick(d0, l), i),
            _put_row(dl_out, pick(select(nonzero, fact, l), swap), i),
            _put_row(du_out, pick(u0, d1), i),
            _put_row(du2_out, pick(full_like(u1, 0), u1), i),
            _put_row(piv, pick(one_based, hlo.add(one_based, full_like(one_based, 1))), i),
        ]

    empty = full_like(d, 0)
    unswapped = hlo.add(iota(shape_of(d), 0, "int32"), full_like(d, 1 - _PAD, "int32"))  # ipiv[i] = i + 1
    start = [_row(d, zero), _row(du, zero), empty, empty, empty, empty, unswapped]
    last, d_last, _, d_out, dl_out, du_out, du2_out, pivots = _rows_loop(off, start, step)
    d_out = _put_row(d_out, d_last, last)  # row n - 1, which no step finishes
    outs = [_from_rows(dl_out, batch_ndim, off), _from_rows(d_out, batch_ndim, n),
            _from_rows(du_out, batch_ndim, off), _from_rows(du2_out, batch_ndim, off2),
            _from_rows(pivots, batch_ndim, n)]
    return tuple(convert(v, o.type.dtype) for v, o in zip(outs, node.outputs))


@linalg_rule(SolveLUFactorTridiagonal)
def lower_solve_lu_factor_tridiagonal(ctx, node, batch_ndim, dl, d, du, du2, ipiv, b):
    """gttrs: a x = b (a.T x = b when `transposed`, no conjugate) from gttrf's factors,
    every right-hand side column along: L's row interchanges and multipliers, then U's
    back substitution; for a.T, U.T's forward substitution, then L.T's."""
    op = core_op(node)
    dtype = node.outputs[0].type.dtype
    dl, d, du, du2, b = (convert(v, dtype) for v in (dl, d, du, du2, b))
    ipiv = convert(ipiv, "int64")
    b, back = _as_matrix(b, op.b_ndim)
    n, off, _ = _tridiagonal_dims(ctx, batch_ndim, d, dl, du, du2)
    _require(ctx, [(dim_size(ipiv, batch_ndim), n), (_matrix_dims(b)[0], n)], ValueError,
             "the pivots or b do not fit the factors' order")
    total = dim_add(n, 2 * _PAD)
    d, dl, du, du2, ipiv, b = (_rows_first(v, batch_ndim, total) for v in (d, dl, du, du2, ipiv, b))
    row_dims = [1, *shape_of(b)[1:]]

    def wide(v):  # a factor row (1, *batch) against a row of b (1, *batch, rhs)
        return broadcast_in_dim(v, row_dims, range(batch_ndim + 1))

    def interchanged(i):  # ipiv[i] != i + 1 (1-based)
        row = _row(ipiv, i)
        return wide(compare(row, broadcast_in_dim(hlo.add(i, full_like(i, 1)), shape_of(row), []), "NE"))

    def minus(x, factor, y):
        return hlo.subtract(x, hlo.multiply(wide(factor), y))

    def solve_l(y):
        """L (L.T) applied: step i finishes row i (i + 1 for L.T, downward) and
        carries the other row it changes."""

        def step(i, values):
            near, out = values  # row i (row i + 1 for L.T) as the last step left it
            swap, l = interchanged(i), _row(dl, i)
            if op.transposed:
                other = _row(y, i)
                done = select(swap, minus(other, l, near), near)
                return [select(swap, near, minus(other, l, near)), _put_row(out, done, i, 1)]
            other = _row(y, i, 1)
            return [select(swap, minus(near, l, other), minus(other, l, near)),
                    _put_row(out, select(swap, other, near), i)]

        first = _row(y, dim_sub(n, 1)) if op.transposed else _row(y, 0)
        last, near, out = _rows_loop(off, [first, full_like(y, 0)], step, downward=op.transposed)
        return _put_row(out, near, last, 1 if op.transposed else 0)

    def solve_u(y):
        """U (U.T) solved, row i from the two rows after it (before it, for U.T),
        which the last two steps carry."""

        def step(i, values):
            x1, x2, out = values
            k = -1 if op.transposed else 0  # U.T reads du[i - 1] and du2[i - 2]
            x = divide(minus(minus(_row(y, i), _row(du, i, k), x1), _row(du2, i, 2 * k), x2), wide(_row(d, i)))
            return [x, x1, _put_row(out, x, i)]

        zeros = full(0, row_dims, dtype)
        return _rows_loop(n, [zeros, zeros, full_like(y, 0)], step, downward=not op.transposed)[3]

    x = solve_l(solve_u(b)) if op.transposed else solve_u(solve_l(b))
    return _declared(node, back(_from_rows(x, batch_ndim, n)), 0)


# --- tensor inverse and solve -----------------------------------------------------


@register_lowering(TensorInv)
def lower_tensor_inv(ctx, node, a):
    """numpy.linalg.tensorinv: the inverse of a reshaped to (prod(shape[:ind]), rest),
    shaped back as shape[ind:] + shape[:ind]; numpy's LinAlgError when singular."""
    ind = node.op.ind
    [a], dtype = _in_precision(node, a, double=True)
    dims = shape_of(a)
    rows, cols = dim_product(dims[:ind]), dim_product(dims[ind:])
    _require(ctx, [(rows, cols)])
    square = reshape(a, [rows, cols])
    inverse, ok = _lu_solve_augmented(ctx, square, identity_matrix([rows, cols], dtype))
    [inverse] = _failed(ctx, ok, [inverse], "Singular matrix")
    return _declared(node, reshape(inverse, [*dims[ind:], *dims[:ind]]), 0)


@register_lowering(TensorSolve)
def lower_tensor_solve(ctx, node, a, b):
    """numpy.linalg.tensorsolve: a (b.shape + Q) against b, x of shape Q."""
    axes = node.op.axes
    a_ndim, b_ndim = node.inputs[0].type.ndim, node.inputs[1].type.ndim
    if a_ndim - b_ndim != node.outputs[0].type.ndim:
        raise UnsupportedParameterError(
            node, f"a.ndim - b.ndim = {a_ndim - b_ndim}", f"PyTensor types the result {node.outputs[0].type}"
        )
    (a, b), dtype = _in_precision(node, a, b, double=True)
    if axes is not None:
        moved = [ax % a_ndim for ax in axes]
        a = transpose(a, [i for i in range(a_ndim) if i not in moved] + moved)
    dims = shape_of(a)
    q = dims[b_ndim:]
    rows = dim_product(shape_of(b))
    _require(ctx, [(rows, dim_product(q))], message="Input arrays must satisfy the requirement "
             "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])")
    x, ok = _lu_solve_augmented(ctx, reshape(a, [rows, dim_product(q)]), reshape(b, [rows, 1]))
    [x] = _failed(ctx, ok, [x], "Singular matrix")
    return _declared(node, reshape(x, list(q)), 0)
