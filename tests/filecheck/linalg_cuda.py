# RUN: %PYTHON %s | FileCheck %s
# Linear algebra lowered for CUDA (LoweringOptions(platform="cuda")): jaxlib's cuSOLVER
# handlers, the targets and attributes JAX emits there, with column-major layouts as on
# the CPU, and XLA's own triangular_solve (cuBLAS). No LAPACK target anywhere.
import pytensor.tensor as pt
from pytensor.tensor import nlinalg as nl
from pytensor.tensor import slinalg as sl

from ir_printing import print_ir
from lowering import LoweringOptions

CUDA = LoweringOptions(platform="cuda")
s = pt.tensor("s", shape=(4, 4))
b = pt.tensor("b", shape=(4, 2))
r = pt.tensor("r", shape=(5, 3))
t = pt.tensor("t", shape=(2, 3, 3), dtype="float32")

# potrf is handed the transposed view, as on the CPU: the lower factor is the upper
# one of a.T, so `lower = false`. One call for the batch.
# CHECK-LABEL: TEST: cholesky opt
# CHECK-NOT: lapack
# CHECK: %[[T:.*]] = stablehlo.transpose %arg0, dims = [0, 2, 1]
# CHECK: stablehlo.custom_call @cusolver_potrf_ffi(%[[T]]) {api_version = 4 : i32, backend_config = {lower = false}
# CHECK-SAME: operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>]
# CHECK-SAME: (tensor<2x3x3xf32>) -> (tensor<2x3x3xf32>, tensor<2xi32>)
print_ir("cholesky", [t], [sl.cholesky(t)], options=CUDA)

# solve: getrf of [a | b], then the triangular solve on U.
# CHECK-LABEL: TEST: solve opt
# CHECK: stablehlo.custom_call @cusolver_getrf_ffi({{.*}}) {api_version = 4 : i32, backend_config = {}
# CHECK-SAME: (tensor<4x6xf64>) -> (tensor<4x6xf64>, tensor<4xi32>, tensor<i32>)
# CHECK: "stablehlo.triangular_solve"({{.*}}) <{left_side = true, lower = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}>
# CHECK-SAME: (tensor<4x4xf64>, tensor<4x2xf64>) -> tensor<4x2xf64>
print_ir("solve", [s, b], [sl.solve(s, b)], options=CUDA)

# eigh: syevd, algorithm 0 (cuSOLVER's Jacobi up to 32 x 32, else syevd).
# CHECK-LABEL: TEST: eigh opt
# CHECK: stablehlo.custom_call @cusolver_syevd_ffi({{.*}}) {api_version = 4 : i32, backend_config = {algorithm = 0 : ui8, lower = true}
print_ir("eigh", [s], list(nl.eigh(s)), options=CUDA)

# Reduced SVD: Jacobi gesvdj returns V, not V^H: one transpose after the call.
# CHECK-LABEL: TEST: svd opt
# CHECK: %[[SVD:.*]]:5 = stablehlo.custom_call @cusolver_gesvdj_ffi(%arg0) {api_version = 4 : i32, backend_config = {compute_uv = true, full_matrices = false}
# CHECK-SAME: (tensor<5x3xf64>) -> (tensor<5x3xf64>, tensor<3xf64>, tensor<5x3xf64>, tensor<3x3xf64>, tensor<i32>)
# CHECK: stablehlo.transpose %[[SVD]]#3, dims = [1, 0]
print_ir("svd", [r], list(nl.svd(r, full_matrices=False)), options=CUDA)

# eig of a real matrix: geev's vectors come packed as real ones (a conjugate pair in
# two columns) and are unpacked by the pair's eigenvalue signs.
# CHECK-LABEL: TEST: eig opt
# CHECK: stablehlo.custom_call @cusolver_geev_ffi(%arg0) {api_version = 4 : i32, backend_config = {left = false, right = true}
# CHECK-SAME: (tensor<4x4xf64>) -> (tensor<4x4xf64>, tensor<4xcomplex<f64>>, tensor<4x4xf64>, tensor<4x4xf64>, tensor<i32>)
# CHECK: stablehlo.pad
# CHECK: stablehlo.complex
print_ir("eig", [s], list(nl.eig(s)), options=CUDA)

# QR: geqrf, then orgqr for Q.
# CHECK-LABEL: TEST: qr opt
# CHECK: stablehlo.custom_call @cusolver_geqrf_ffi
# CHECK: stablehlo.custom_call @cusolver_orgqr_ffi
print_ir("qr", [s], list(sl.qr(s)), options=CUDA)
