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
