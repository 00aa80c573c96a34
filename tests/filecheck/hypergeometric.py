# RUN: %PYTHON %s | FileCheck %s
# hyp2f1: Cephes' methods on whole tensors. Its recursive calls are stacked along new
# leading axes (the 1/x formula's two terms, the recurrence on c's two starting values,
# the 1 - x formula's two series, the recurrence in a's two starting values at two
# levels), so the whole Op is six loops.
import pytensor.tensor as pt

from ir_printing import print_ir

a, b, c, x = (pt.dvector(n) for n in "abcx")
# CHECK-LABEL: TEST: hyp2f1 opt
# The b = c sum, over the two calls of the 1/x formula:
# CHECK: stablehlo.while(%{{.*}}) : tensor<i64>, tensor<2x?xi1>
# The Gauss series over every stacked call, 2 x 2 x 3 x 3 x 2:
# CHECK: stablehlo.while(%{{.*}}) : tensor<i64>, tensor<2x2x3x3x2x?xi1>, tensor<2x2x3x3x2x?xf64>
# The recurrence in a, inner level then outer:
# CHECK: stablehlo.while(%{{.*}}) : tensor<i64>, tensor<2x3x3x2x?xi1>
# CHECK: stablehlo.while(%{{.*}}) : tensor<i64>, tensor<3x3x2x?xi1>
# The psi expansion's series and its finite sum:
# CHECK-COUNT-2: stablehlo.while(%{{.*}}) : tensor<i64>, tensor<3x2x?xi1>
# CHECK-NOT: stablehlo.while
# CHECK: return
print_ir("hyp2f1", [a, b, c, x], [pt.hyp2f1(a, b, c, x)])
