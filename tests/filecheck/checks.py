# RUN: %PYTHON %s | FileCheck %s
# CheckAndRaise: each failed condition is or-ed into one i1 error flag, an extra @main result.
import pytensor.tensor as pt
from pytensor.raise_op import Assert

from ir_printing import print_ir

x = pt.vector("x")

# CHECK-LABEL: TEST: assert raw
# CHECK: func.func public @main(%arg0: tensor<?xf64>, %arg1: tensor<i1>, %arg2: tensor<i1>) -> (tensor<?xf64>, tensor<i1>)
# CHECK: %[[NOT1:.*]] = stablehlo.not %arg1
# CHECK: %[[NOT2:.*]] = stablehlo.not %arg2
# CHECK: %[[FAILED:.*]] = stablehlo.or %[[NOT1]], %[[NOT2]]
# CHECK: return %arg0, %[[FAILED]]
a, b = pt.scalar("a", dtype="bool"), pt.scalar("b", dtype="bool")
print_ir("assert", [x, a, b], [Assert("bad x")(x, a, b)], raw=True)

# CHECK-LABEL: TEST: assert_all opt
# CHECK: stablehlo.compare  GT
# CHECK: stablehlo.reduce
# CHECK: return %arg0, %{{.*}} : tensor<?xf64>, tensor<i1>
print_ir("assert_all", [x], [Assert("x positive")(x, pt.all(x > 0))])
