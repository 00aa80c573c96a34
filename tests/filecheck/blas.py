# RUN: %PYTHON %s | FileCheck %s
# Dots are one stablehlo.dot_general each, at HIGHEST precision; matmul's batch dims
# are dot_general batching dims, not a loop.
import pytensor.tensor as pt
from pytensor.tensor.blas import Gemm

from ir_printing import print_ir

x, y = pt.matrix("x"), pt.matrix("y")

# CHECK-LABEL: TEST: dot raw
# CHECK: stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [HIGHEST, HIGHEST] : (tensor<?x?xf64>, tensor<?x?xf64>) -> tensor<?x?xf64>
print_ir("dot", [x, y], [pt.dot(x, y)], raw=True)

# int8 operands: the product is computed and wraps in int8, as numpy's matmul.
# CHECK-LABEL: TEST: dot_int8 raw
# CHECK: stablehlo.dot_general {{.*}} -> tensor<?x?xi8>
xi, yi = pt.matrix("xi", dtype="int8"), pt.matrix("yi", dtype="int8")
print_ir("dot_int8", [xi, yi], [pt.dot(xi, yi)], raw=True)

# Booleans: count the true products in i32, then compare with 0.
# CHECK-LABEL: TEST: dot_bool raw
# CHECK: stablehlo.dot_general {{.*}} -> tensor<?x?xi32>
# CHECK: stablehlo.compare  NE
xb, yb = pt.matrix("xb", dtype="bool"), pt.matrix("yb", dtype="bool")
print_ir("dot_bool", [xb, yb], [pt.dot(xb, yb)], raw=True)

# CHECK-LABEL: TEST: matmul_batched opt
# CHECK: stablehlo.dot_general %arg0, %arg1, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2]
# CHECK-SAME: -> tensor<5x2x3x7xf32>
a = pt.tensor("a", shape=(5, 2, 3, 4), dtype="float32")
b = pt.tensor("b", shape=(5, 2, 4, 7), dtype="float32")
print_ir("matmul_batched", [a, b], [a @ b])

# A statically broadcastable batch dim is broadcast before the batched dot.
# CHECK-LABEL: TEST: matmul_broadcast opt
# CHECK: stablehlo.broadcast_in_dim %arg0, dims = [0, 1, 2] : (tensor<1x3x4xf32>) -> tensor<5x3x4xf32>
# CHECK: stablehlo.dot_general {{.*}} batching_dims = [0] x [0]
c = pt.tensor("c", shape=(1, 3, 4), dtype="float32")
d = pt.tensor("d", shape=(5, 4, 2), dtype="float32")
print_ir("matmul_broadcast", [c, d], [c @ d])

# Gemm: beta == 0 selects the bare product, so a NaN in z cannot leak in.
# CHECK-LABEL: TEST: gemm raw
# CHECK: stablehlo.dot_general %arg2, %arg3
# CHECK: %[[ZERO:.*]] = stablehlo.compare  EQ, %arg4
# CHECK: stablehlo.select %[[ZERO]]
z, s, t = pt.matrix("z"), pt.scalar("s"), pt.scalar("t")
print_ir("gemm", [z, s, x, y, t], [Gemm(inplace=False)(z, s, x, y, t)], raw=True)

# A transposed operand is contracted in place: X.T @ r (a regression's gradient) reads X's
# rows, with no transpose that XLA would copy for a matrix-vector product.
# CHECK-LABEL: TEST: transposed_lhs opt
# CHECK-NOT: stablehlo.transpose
# CHECK: stablehlo.dot_general %arg0, %{{[0-9]+}}, contracting_dims = [0] x [0], precision = [HIGHEST, HIGHEST] : (tensor<?x?xf64>, tensor<?x1xf64>) -> tensor<?x1xf64>
# CHECK-NOT: stablehlo.transpose
r = pt.vector("r")
print_ir("transposed_lhs", [x, r], [pt.dot(x.T, r)])

# The same through SpecifyShape: X is cut to the specified sizes (padded first, so that
# an X of other sizes reaches SpecifyShape's check; both fold away for the right sizes),
# and the cut X is contracted in place.
# CHECK-LABEL: TEST: transposed_specified_lhs opt
# CHECK-NOT: stablehlo.transpose
# CHECK: %[[PADDED:.*]] = stablehlo.dynamic_pad %arg0
# CHECK: %[[X:.*]] = stablehlo.slice %[[PADDED]] [0:500, 0:20] : (tensor<?x?xf64>) -> tensor<500x20xf64>
# CHECK-NOT: stablehlo.transpose
# CHECK: stablehlo.dot_general %[[X]], %{{[0-9]+}}, contracting_dims = [0] x [0], precision = [HIGHEST, HIGHEST] : (tensor<500x20xf64>, tensor<?x1xf64>) -> tensor<20x1xf64>
# CHECK-NOT: stablehlo.transpose
# CHECK-LABEL: TEST:
print_ir("transposed_specified_lhs", [x, r], [pt.dot(pt.specify_shape(x, (500, 20)).T, r)])
print("TEST: end")
