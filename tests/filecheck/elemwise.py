# RUN: %PYTHON %s | FileCheck %s
import pytensor.tensor as pt

from ir_printing import print_ir

x = pt.matrix("x")
row = pt.matrix("row", shape=(1, None))

# CHECK-LABEL: TEST: add_broadcast raw
# CHECK: stablehlo.dynamic_broadcast_in_dim %arg1
# CHECK: stablehlo.add %arg0
print_ir("add_broadcast", [x, row], x + row, raw=True)

# The constant 2 is folded into one splat after the pipeline.
# CHECK-LABEL: TEST: mul_const opt
# CHECK: stablehlo.constant dense<2.000000e+00> : tensor<3x4xf32>
# CHECK: stablehlo.multiply %arg0
xs = pt.matrix("xs", shape=(3, 4), dtype="float32")
print_ir("mul_const", [xs], xs * 2)

# Unknown sizes: every broadcast in a chain takes the length read once from the argument
# (at the start of the function), and a one-dim shape is a reshape, not a concatenate.
# CHECK-LABEL: TEST: dynamic_chain raw
# CHECK: %[[N32:.*]] = stablehlo.get_dimension_size %arg0, dim = 0
# CHECK-NEXT: %[[N:.*]] = stablehlo.convert %[[N32]] : (tensor<i32>) -> tensor<i64>
# CHECK-NOT: stablehlo.get_dimension_size
# CHECK-NOT: stablehlo.concatenate
# CHECK: %[[S1:.*]] = stablehlo.reshape %[[N]] : (tensor<i64>) -> tensor<1xi64>
# CHECK: stablehlo.dynamic_broadcast_in_dim {{.*}}, %[[S1]]
# CHECK: %[[S2:.*]] = stablehlo.reshape %[[N]] : (tensor<i64>) -> tensor<1xi64>
# CHECK: stablehlo.dynamic_broadcast_in_dim {{.*}}, %[[S2]]
# CHECK: stablehlo.sine
# CHECK: %[[S3:.*]] = stablehlo.reshape %[[N]] : (tensor<i64>) -> tensor<1xi64>
# CHECK: stablehlo.dynamic_broadcast_in_dim {{.*}}, %[[S3]]
v = pt.vector("v")
print_ir("dynamic_chain", [v], pt.sin(v * 2.0 + 1.0) * 3.0, raw=True)
