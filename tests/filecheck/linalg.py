# RUN: %PYTHON %s | FileCheck %s
# Linear algebra: LAPACK through jaxlib's typed-FFI CPU targets (column-major layouts)
# and no LAPACK call on an empty matrix. potrf and trsm get the transposed matrices
# (our row-major data read column-major, no copy), so their triangle flags are flipped.
import pytensor.tensor as pt
from pytensor.tensor import nlinalg as nl
from pytensor.tensor import slinalg as sl
from pytensor.tensor._linalg.solve import tridiagonal as tri

from ir_printing import print_ir

x, y = pt.matrix("x"), pt.matrix("y")
s = pt.tensor("s", shape=(4, 4))
t = pt.tensor("t", shape=(2, 3, 3), dtype="float32")

# Unknown sizes: the result shapes travel as operands until specialization; the call
# sits in an `if` that skips it for an empty matrix.
# CHECK-LABEL: TEST: cholesky raw
# CHECK: stablehlo.if
# CHECK: stablehlo.custom_call @lapack_dpotrf_ffi({{.*}}) {api_version = 4 : i32, backend_config = {uplo = 85 : ui8}, indices_of_shape_operands = dense<[1, 2]> : tensor<2xi64>
# CHECK-SAME: operand_layouts = [dense<[0, 1]> : tensor<2xindex>
# CHECK: stablehlo.select
print_ir("cholesky", [x], [sl.cholesky(x)], raw=True)

# Static sizes: the plain call, no shape operands and no `if`.
# CHECK-LABEL: TEST: cholesky_static opt
# CHECK-NOT: stablehlo.if
# CHECK: %[[T:.*]] = stablehlo.transpose %arg0, dims = [1, 0]
# CHECK: stablehlo.custom_call @lapack_dpotrf_ffi(%[[T]]) {api_version = 4 : i32, backend_config = {uplo = 76 : ui8}
# CHECK-SAME: (tensor<4x4xf64>) -> (tensor<4x4xf64>, tensor<i32>)
print_ir("cholesky_static", [s], [sl.cholesky(s, lower=False)])

# A batch is one call: batch dims slowest in the layout.
# CHECK-LABEL: TEST: cholesky_batched opt
# CHECK: stablehlo.custom_call @lapack_spotrf_ffi
# CHECK-SAME: operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>]
# CHECK-SAME: (tensor<2x3x3xf32>) -> (tensor<2x3x3xf32>, tensor<2xi32>)
print_ir("cholesky_batched", [t], [sl.cholesky(t)])

# a x = b as x.T a.T = b.T: trsm from the right, on the upper triangle of a.T. The
# zero-on-the-diagonal test (NaN, as scipy's) reads the diagonal's n entries, gathered,
# not all of a.
# CHECK-LABEL: TEST: solve_triangular opt
# CHECK: stablehlo.custom_call @lapack_dtrsm_ffi({{.*}}backend_config = {diag = 78 : ui8, side = 82 : ui8, trans_x = 78 : ui8, uplo = 85 : ui8}
# CHECK: %[[D:.*]] = "stablehlo.dynamic_gather"(%arg0,
# CHECK: stablehlo.compare EQ, %[[D]],
print_ir("solve_triangular", [x, y], [sl.solve_triangular(x, y, lower=True)])

# A triangular system of at most 8 unknowns (static) is solved by substitution written
# out, x0 = b0 / l00, x1 = (b1 - l10 x0) / l11, ...: elementwise ops over b's rows, which
# XLA fuses, where a trsm call costs more than the arithmetic (the LKJ model's 3 x 3).
# CHECK-LABEL: TEST: solve_triangular_small opt
# CHECK-NOT: custom_call
# CHECK: %[[B0:.*]] = stablehlo.slice %arg1 [0:1, 0:500]
# CHECK: %[[B1:.*]] = stablehlo.slice %arg1 [1:2, 0:500]
# CHECK: %[[X0:.*]] = stablehlo.divide %[[B0]], %{{.*}} : tensor<1x500xf64>
# CHECK: %[[P:.*]] = stablehlo.multiply %{{.*}}, %[[X0]]
# CHECK: %[[R:.*]] = stablehlo.subtract %[[B1]], %[[P]]
# CHECK: %[[X1:.*]] = stablehlo.divide %[[R]], %{{.*}}
# CHECK: stablehlo.concatenate %[[X0]], %[[X1]], %{{.*}}, dim = 0 : {{.*}} -> tensor<3x500xf64>
# CHECK-NOT: custom_call
l3, b3 = pt.tensor("l3", shape=(3, 3)), pt.tensor("b3", shape=(3, 500))
print_ir("solve_triangular_small", [l3, b3], [sl.solve_triangular(l3, b3, lower=True)])

# Unknown sizes: trsm overwrites its right-hand side (an operand alias), so the result's
# shape operand is read from that operand itself, and the operand is reshaped to that
# same shape: refinement, which may learn an operand's dims one by one but a result's
# only all at once, then types both alike.
# CHECK-LABEL: TEST: solve_triangular_dynamic raw
# CHECK: %[[B:.*]] = stablehlo.transpose %arg1, dims = [1, 0]
# CHECK: stablehlo.if
# CHECK: %[[R0:.*]] = stablehlo.get_dimension_size %[[B]], dim = 0
# CHECK: %[[R1:.*]] = stablehlo.get_dimension_size %[[B]], dim = 1
# CHECK: %[[SAME:.*]] = stablehlo.dynamic_reshape %[[B]]
# CHECK: %[[SHAPE:.*]] = stablehlo.concatenate
# CHECK: stablehlo.custom_call @lapack_dtrsm_ffi(%{{.*}}, %[[SAME]], %[[SHAPE]])
# CHECK-SAME: output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 1, operand_tuple_indices = []>]
print_ir("solve_triangular_dynamic", [x, y], [sl.solve_triangular(x, y, lower=True)], raw=True)

# solve: one getrf of [a | b] (its row swaps and multipliers reach b), then U x = y.
# CHECK-LABEL: TEST: solve opt
# CHECK: stablehlo.concatenate %arg0, %arg1, dim = 1
# CHECK: stablehlo.custom_call @lapack_dgetrf_ffi
# CHECK: stablehlo.custom_call @lapack_dtrsm_ffi({{.*}}trans_x = 78 : ui8, uplo = 76 : ui8}
print_ir("solve", [x, y], [sl.solve(x, y)])

# assume_a="pos": potrf, then L y = b and L^H x = y.
# CHECK-LABEL: TEST: solve_pos opt
# CHECK: stablehlo.custom_call @lapack_dpotrf_ffi
# CHECK: stablehlo.custom_call @lapack_dtrsm_ffi({{.*}}trans_x = 78 : ui8
# CHECK: stablehlo.custom_call @lapack_dtrsm_ffi({{.*}}trans_x = 67 : ui8
print_ir("solve_pos", [x, y], [sl.solve(x, y, assume_a="pos", lower=True)])

# inv: run-time checks (one flag each, as an extra result) raise numpy's LinAlgError for
# a matrix that is not square and for a singular one.
# CHECK-LABEL: TEST: inverse opt
# CHECK: func.func public @main(%arg0: tensor<?x?xf64>) -> (tensor<?x?xf64>, tensor<2xi1>)
# CHECK: stablehlo.custom_call @lapack_dgetrf_ffi
print_ir("inverse", [x], [nl.matrix_inverse(x)])

# CHECK-LABEL: TEST: eigh opt
# CHECK: stablehlo.custom_call @lapack_dsyevd_ffi({{.*}}backend_config = {mode = 86 : ui8, uplo = 76 : ui8}
print_ir("eigh", [x], list(nl.eigh(x)))

# CHECK-LABEL: TEST: svd_values opt
# CHECK: stablehlo.custom_call @lapack_dgesdd_ffi({{.*}}backend_config = {mode = 78 : ui8}
print_ir("svd_values", [x], [nl.svd(x, compute_uv=False)])

# CHECK-LABEL: TEST: qr opt
# CHECK: stablehlo.custom_call @lapack_dgeqrf_ffi
# CHECK: stablehlo.custom_call @lapack_dorgqr_ffi
print_ir("qr", [x], list(sl.qr(x)))

# numpy's eig refuses a non-finite matrix before geev: that check's flag comes first.
# CHECK-LABEL: TEST: eig opt
# CHECK: stablehlo.is_finite %arg0
# CHECK: stablehlo.custom_call @lapack_dgeev_ffi({{.*}}backend_config = {compute_left = 78 : ui8, compute_right = 86 : ui8}
# CHECK: stablehlo.complex
# CHECK: return {{.*}}, tensor<3xi1>
print_ir("eig", [x], list(nl.eig(x)))

# lu: scipy's check_finite as the module's check flag (a NaN or an infinity anywhere in
# x raises its ValueError), then one getrf.
# CHECK-LABEL: TEST: lu opt
# CHECK: %[[F:.*]] = stablehlo.is_finite %arg0
# CHECK: stablehlo.reduce(%[[F]] init: %{{.*}}) applies stablehlo.and across dimensions = [0, 1]
# CHECK: stablehlo.custom_call @lapack_dgetrf_ffi
# CHECK: return {{.*}}, tensor<1xi1>
print_ir("lu", [x], list(sl.lu(x)))

# expm: Padé 13 of a / 2^s (one getrf-based solve), then a while loop of squarings.
# CHECK-LABEL: TEST: expm opt
# CHECK: stablehlo.custom_call @lapack_dgetrf_ffi
# CHECK: stablehlo.while
# CHECK: stablehlo.dot_general
print_ir("expm", [x], [sl.expm(x)])

# CHECK-LABEL: TEST: schur opt
# CHECK: stablehlo.custom_call @lapack_dgees_ffi({{.*}}backend_config = {mode = 86 : ui8, sort = 78 : ui8}
print_ir("schur", [x], list(sl.schur(x)))

# sort: jaxlib's gees selects nothing, so the executable runs perform (scipy's gees,
# reordering with trsen) on the host: one callback, no gees target and no loop.
# CHECK-LABEL: TEST: schur_sort opt
# CHECK-NOT: lapack_dgees_ffi
# CHECK: stablehlo.custom_call @xla_ffi_python_cpu_callback(%arg0) {api_version = 4 : i32, backend_config = {index = 0 : ui64}
# CHECK-SAME: -> (tensor<4x4xf64>, tensor<4x4xf64>)
# CHECK-NOT: stablehlo.while
# CHECK: return {{.*}} : tensor<4x4xf64>, tensor<4x4xf64>
print_ir("schur_sort", [s], list(sl.schur(s, sort="lhp")))

# A real matrix with output="complex" is converted before the call, as perform converts it.
# CHECK-LABEL: TEST: schur_sort_complex opt
# CHECK: %[[C:.*]] = stablehlo.convert %arg0 : (tensor<4x4xf64>) -> tensor<4x4xcomplex<f64>>
# CHECK: stablehlo.custom_call @xla_ffi_python_cpu_callback(%[[C]])
# CHECK-SAME: -> (tensor<4x4xcomplex<f64>>, tensor<4x4xcomplex<f64>>)
print_ir("schur_sort_complex", [s], list(sl.schur(s, output="complex", sort="iuc")))

# QZ: jaxlib has no gges, so the executable calls PyTensor's perform (scipy's gges and
# tgsen) on the host through XLA's CPU callback, `index` naming the function; row-major
# layouts, or XLA could hand over a transposed buffer as it is. Squareness is a check.
# CHECK-LABEL: TEST: qz opt
# CHECK: func.func public @main(%arg0: tensor<?x?xf64>, %arg1: tensor<?x?xf64>) -> ({{.*}}, tensor<3xi1>)
# CHECK: stablehlo.custom_call @xla_ffi_python_cpu_callback(%arg0, %arg1, {{.*}}) {api_version = 4 : i32, backend_config = {index = 0 : ui64}, indices_of_shape_operands = dense<[2, 3, 4, 5]> : tensor<4xi64>
# CHECK-SAME: operand_layouts = [dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>
print_ir("qz", [x, y], list(sl.qz(x, y, sort="iuc")))

# A batch is one call (perform loops over it on the host); ints are converted first.
q, r = pt.tensor("q", shape=(2, 4, 4), dtype="int32"), pt.tensor("r", shape=(2, 4, 4))
# CHECK-LABEL: TEST: ordqz_batched opt
# CHECK: %[[A:.*]] = stablehlo.convert %arg0 : (tensor<2x4x4xi32>) -> tensor<2x4x4xf64>
# CHECK: stablehlo.custom_call @xla_ffi_python_cpu_callback(%[[A]], %arg1) {api_version = 4 : i32, backend_config = {index = 0 : ui64}, operand_layouts = [dense<[2, 1, 0]> : tensor<3xindex>, dense<[2, 1, 0]> : tensor<3xindex>]
# CHECK-SAME: -> (tensor<2x4x4xf64>, tensor<2x4x4xf64>, tensor<2x4xcomplex<f64>>, tensor<2x4xf64>, tensor<2x4x4xf64>, tensor<2x4x4xf64>)
print_ir("ordqz_batched", [q, r], list(sl.ordqz(q, r, sort="ouc")))

# lstsq: gesdd's reduced SVD; the residuals' length comes from the rank, a slice whose
# limit the program computes (the runtime measures it before specializing).
# CHECK-LABEL: TEST: lstsq opt
# CHECK: stablehlo.custom_call @lapack_dgesdd_ffi({{.*}}backend_config = {mode = 83 : ui8}
# CHECK: %[[RES:.*]] = stablehlo.optimization_barrier
# CHECK: stablehlo.real_dynamic_slice %[[RES]]
print_ir("lstsq", [x, y], list(nl.lstsq(x, y, -1)))

# gttrf and gttrs have no jaxlib target: loops over the rows, rows first (5 + 2 * 2
# padding rows), one row of every batch entry a step, carrying the rows a step changes
# and only writing the buffers; LAPACK's pivot test |d[i]| >= |dl[i]| picks the branch.
a, b = pt.tensor("a", shape=(2, 5, 5)), pt.tensor("b", shape=(2, 5, 3))
factors = tri.tridiagonal_lu_factor(a)
# CHECK-LABEL: TEST: tridiagonal_lu opt
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<1x2xf64>, tensor<1x2xf64>, tensor<9x2xf64>, tensor<9x2xf64>, tensor<9x2xf64>, tensor<9x2xf64>, tensor<9x2xi32>
# CHECK: stablehlo.compare GE, {{.*}} : (tensor<1x2xf64>, tensor<1x2xf64>) -> tensor<1x2xi1>
# CHECK: stablehlo.dynamic_update_slice {{.*}} -> tensor<9x2xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<1x2x3xf64>, tensor<9x2x3xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<1x2x3xf64>, tensor<1x2x3xf64>, tensor<9x2x3xf64>
print_ir("tridiagonal_lu", [a, b], [*factors, tri.tridiagonal_lu_solve(factors, b, b_ndim=2)])

# PyMC's positive-definiteness test is scipy.linalg.cholesky's success: potrf of x's
# upper triangle (the transposed view with uplo 'L'), in scipy's precision (single for
# int16), and a finiteness check as the module's check flag.
# CHECK-LABEL: TEST: pos_def_matrix opt
# CHECK: stablehlo.convert %arg0 : (tensor<3x3xi16>) -> tensor<3x3xf32>
# CHECK: stablehlo.is_finite
# CHECK: stablehlo.custom_call @lapack_spotrf_ffi({{.*}}) {api_version = 4 : i32, backend_config = {uplo = 76 : ui8}
# CHECK: return {{.*}} : tensor<i1>, tensor<1xi1>
from pymc.distributions.multivariate import matrix_pos_def  # noqa: E402

i = pt.tensor("i", shape=(3, 3), dtype="int16")
print_ir("pos_def_matrix", [i], [matrix_pos_def(i)])
