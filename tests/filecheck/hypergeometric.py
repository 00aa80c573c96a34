# RUN: %PYTHON %s | FileCheck %s
# hyp2f1: Cephes' methods on whole tensors. Its recursive calls are stacked along new
# leading axes (the 1/x formula's two terms, the recurrence on c's two starting values,
# the 1 - x formula's two series, the recurrence in a's two starting values at two
# levels), so the whole Op is six loops. The Gauss series and the recurrence in a take
# their elements flat (every stacked call of every element) and compact them
# (`regions.converge_compacting`): a loop over all, then, inside an `if` on the level's
# size (which specialization folds) and one on whether any element is still going,
# their slots (a prefix sum, a scatter of their positions), a loop over them that
# resumes at the first loop's step count and compacts once more the same way (the
# series: twice more, its last level as narrow as 16 slots), and their states scattered
# back. Methods few elements take (the 1 - x formula's gamma functions, the psi
# expansion, Gauss's sum at x = 1) run inside an `if` that some element does.
import pytensor.tensor as pt

from ir_printing import print_ir

a, b, c, x = (pt.dvector(n) for n in "abcx")
# CHECK-LABEL: TEST: hyp2f1 opt
# The b = c sum, over the two calls of the 1/x formula:
# CHECK: stablehlo.while(%{{.*}}) : tensor<i64>, tensor<2x?xi1>
# The Gauss series over every stacked call, 2 x 2 x 3 x 3 x 2 of each element:
# CHECK: %[[S:.*]]:7 = stablehlo.while(%{{.*}}) : tensor<i64>, tensor<?xi1>, tensor<?xf64>
# CHECK: "stablehlo.if"
# CHECK-NEXT: stablehlo.reduce
# CHECK-NEXT: "stablehlo.if"
# CHECK: "stablehlo.scatter"
# CHECK: %[[S1:.*]]:7 = stablehlo.while(%iterArg = %[[S]]#0,
# CHECK: "stablehlo.scatter"
# CHECK: %[[S2:.*]]:7 = stablehlo.while(%iterArg = %[[S1]]#0,
# CHECK: "stablehlo.scatter"
# CHECK: stablehlo.while(%iterArg = %[[S2]]#0,
# CHECK-COUNT-5: "stablehlo.scatter"(%[[S2]]#
# CHECK-COUNT-5: "stablehlo.scatter"(%[[S1]]#
# CHECK-COUNT-5: "stablehlo.scatter"(%[[S]]#
# The recurrence in a, inner level then outer:
# CHECK: %[[A:.*]]:6 = stablehlo.while(%{{.*}}) : tensor<i64>, tensor<?xi1>, tensor<?xf64>
# CHECK: %[[A1:.*]]:6 = stablehlo.while(%iterArg = %[[A]]#0,
# CHECK: stablehlo.while(%iterArg = %[[A1]]#0,
# CHECK: %[[B:.*]]:6 = stablehlo.while(%{{.*}}) : tensor<i64>, tensor<?xi1>, tensor<?xf64>
# CHECK: %[[B1:.*]]:6 = stablehlo.while(%iterArg = %[[B]]#0,
# CHECK: stablehlo.while(%iterArg = %[[B1]]#0,
# The 1 - x formula's gamma functions, then the psi expansion's series and its finite
# sum, each where some element of hyt2f1's 3 x 2 calls takes it. Each method's gamma
# functions are one batch (one copy of lgamma's code, about 0.1 s of XLA's compile): the
# formula's seven lgammas (Gamma(c) from its own), the expansion's ten gammas.
# CHECK: stablehlo.reduce{{.*}}applies stablehlo.or across dimensions = [0, 1, 2] : (tensor<3x2x?xi1>
# CHECK-NEXT: "stablehlo.if"
# CHECK: stablehlo.concatenate {{.*}} -> tensor<7x3x2x?xf64>
# CHECK: stablehlo.reduce{{.*}}applies stablehlo.or across dimensions = [0, 1, 2] : (tensor<3x2x?xi1>
# CHECK-NEXT: "stablehlo.if"
# CHECK: stablehlo.concatenate {{.*}} -> tensor<10x3x2x?xf64>
# CHECK-COUNT-2: stablehlo.while(%{{.*}}) : tensor<i64>, tensor<3x2x?xi1>
# CHECK-NOT: stablehlo.while
# CHECK: return
print_ir("hyp2f1", [a, b, c, x], [pt.hyp2f1(a, b, c, x)])
