# RUN: %PYTHON %s | FileCheck %s
# Bessel functions: float64 work, whole-tensor while loops (continued fractions, the
# recurrences, Temme's series, Steed's fraction, Hankel's expansion), then one cast.
import pytensor.tensor as pt

from ir_printing import print_ir

v = pt.vector("v", dtype="float32")
x = pt.vector("x", dtype="float32")

# CHECK-LABEL: TEST: iv raw
# CHECK: func.func public @main(%arg0: tensor<?xf32>, %arg1: tensor<?xf32>) -> tensor<?xf32>
# CHECK: stablehlo.convert %arg0 : (tensor<?xf32>) -> tensor<?xf64>
# CHECK: stablehlo.while
# CHECK: stablehlo.while
# CHECK: stablehlo.power
# CHECK-NOT: chlo.lgamma
# CHECK: stablehlo.convert {{.*}} : (tensor<?xf64>) -> tensor<?xf32>
print_ir("iv", [v, x], pt.iv(v, x), raw=True)

# Temme's series (x < 1) runs only where some element takes it (the `if` of its two
# sums), and where no more than a quarter do, over a quarter of the slots holding those
# (`regions.where_few`): their positions scattered into the slots, mu and x gathered, the
# series' loop (its count, mask and 7 values), its sums scattered back.
# CHECK-LABEL: TEST: kve raw
# CHECK: %{{.*}}:2 = "stablehlo.if"
# CHECK: %{{.*}}:9 = stablehlo.while
# CHECK: "stablehlo.scatter"
# CHECK-COUNT-2: "stablehlo.dynamic_gather"
# CHECK: %{{.*}}:9 = stablehlo.while
# CHECK-COUNT-2: "stablehlo.scatter"
# Steed's fraction (K's, and J's and Y's) takes many steps only for x near 1: it compacts
# the elements still going (`regions.converge_compacting`), two more copies of its loop
# of 13 values going on from its step count, after rows of 128 have stepped (an `if`).
# CHECK: %[[R:.*]]:13 = "stablehlo.if"
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<?x128xi1>, tensor<?x128xf64>
# CHECK: %[[S:.*]]:13 = stablehlo.while(%iterArg = %[[R]]#0, {{.*}}) : tensor<i64>, tensor<?xi1>, tensor<?xf64>
# CHECK: "stablehlo.scatter"
# CHECK: %[[S1:.*]]:13 = stablehlo.while(%iterArg = %[[S]]#0,
# CHECK: stablehlo.while(%iterArg = %[[S1]]#0,
# CHECK: return
print_ir("kve", [v, x], pt.kve(v, x), raw=True)

# J: the Hankel sums meet cos(x), sin(x) and the exact sin(pi t) of the phase.
# CHECK-LABEL: TEST: jv raw
# CHECK: stablehlo.while
# CHECK-DAG: stablehlo.cosine
# CHECK-DAG: stablehlo.sine
# CHECK-DAG: stablehlo.round_nearest_even
# CHECK: return
print_ir("jv", [v, x], pt.jv(v, x), raw=True)

# J0 is Cephes' rational functions, no loop: Hankel's phase x - pi/4 alone.
# CHECK-LABEL: TEST: j0 raw
# CHECK-NOT: stablehlo.while
# CHECK-DAG: stablehlo.cosine
# CHECK-DAG: stablehlo.sine
# CHECK-DAG: stablehlo.sqrt
# CHECK-NOT: stablehlo.while
# CHECK: return
print_ir("j0", [x], pt.j0(x), raw=True)

# PyMC's scaled I0e and I1e: the series alone, no e**|x| factor (I0, I1 multiply by it).
# CHECK-LABEL: TEST: pymc_i1e raw
# CHECK: chlo.bessel_i1e
# CHECK-NOT: stablehlo.exponential
# CHECK: return
# CHECK-LABEL: TEST: pymc_i0e raw
# CHECK-NOT: stablehlo.exponential
# CHECK: stablehlo.sqrt
# CHECK-NOT: stablehlo.exponential
# CHECK: return
from pymc.distributions.dist_math import i0e, i1e  # noqa: E402

print_ir("pymc_i1e", [x], i1e(x), raw=True)
print_ir("pymc_i0e", [x], i0e(x), raw=True)
