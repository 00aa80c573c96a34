# RUN: %PYTHON %s | FileCheck %s
# CheckAndRaise: each failed condition is or-ed into one i1 error flag; @main returns its
# flags as one extra result, an i1 vector (one element per check).
import pytensor.tensor as pt
from pytensor.raise_op import Assert

from ir_printing import print_ir

x = pt.vector("x")

# CHECK-LABEL: TEST: assert raw
# CHECK: func.func public @main(%arg0: tensor<?xf64>, %arg1: tensor<i1>, %arg2: tensor<i1>) -> (tensor<?xf64>, tensor<1xi1>)
# CHECK: %[[NOT1:.*]] = stablehlo.not %arg1
# CHECK: %[[NOT2:.*]] = stablehlo.not %arg2
# CHECK: %[[FAILED:.*]] = stablehlo.or %[[NOT1]], %[[NOT2]]
# CHECK: %[[FLAGS:.*]] = stablehlo.reshape %[[FAILED]] : (tensor<i1>) -> tensor<1xi1>
# CHECK: %[[ALL:.*]] = stablehlo.concatenate %[[FLAGS]], dim = 0
# CHECK: return %arg0, %[[ALL]]
a, b = pt.scalar("a", dtype="bool"), pt.scalar("b", dtype="bool")
print_ir("assert", [x, a, b], [Assert("bad x")(x, a, b)], raw=True)

# CHECK-LABEL: TEST: assert_all opt
# CHECK: stablehlo.compare  GT
# CHECK: stablehlo.reduce
# CHECK: return %arg0, %{{.*}} : tensor<?xf64>, tensor<1xi1>
print_ir("assert_all", [x], [Assert("x positive")(x, pt.all(x > 0))])
