# RUN: %PYTHON %s | FileCheck %s
# Series special functions: each series or continued fraction is a stablehlo.while
# over whole tensors, carrying the step count, the mask of elements still summing
# and the series' state; elements whose terms vanished keep their state (select).
# Those of gammainc and betainc compact (`regions.converge_compacting`): the loop over
# all elements stops once at most n / 16 are going, and two more copies of it, each
# inside `if`s (on its size, which specialization folds, and on whether any element is
# still going), run over the going elements gathered, from the same step count. Lowered
# for the CPU, an `if` (more than n / 16 elements active) first steps them by rows of
# 128, a loop over the rows holding each row's loop of at most 64 steps; the loop over
# all elements goes on from the count that `if` gives.
import pytensor.tensor as pt
from pytensor.tensor.elemwise import Elemwise

from ir_printing import print_ir
from lowering.rewrites import gammainc_pair

a, x = pt.dvector("a"), pt.dvector("x")

# gammainc: P's series, Q's continued fraction and Q's small-x series, then Temme's
# expansion inside a stablehlo.if (run only when some element needs it): a while of at
# most 25 steps, each reading row k of the 25 x 25 table and summing c_k(eta) from it by
# Horner's rule (no dot of the table with a 25 x n stack of eta's powers).
# CHECK-LABEL: TEST: gammainc opt
# CHECK: %[[R:.*]]:5 = "stablehlo.if"
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<?x128xi1>, tensor<?x128xf64>, tensor<?x128xf64>, tensor<?x128xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<128xi1>, tensor<128xf64>, tensor<128xf64>, tensor<128xf64>
# CHECK: %[[P:.*]]:5 = stablehlo.while(%iterArg = %[[R]]#0, {{.*}}) : tensor<i64>, tensor<?xi1>, tensor<?xf64>, tensor<?xf64>, tensor<?xf64>
# The count of going elements against the level's limit, or (where the limit is 0) any:
# CHECK: stablehlo.reduce{{.*}}applies stablehlo.add
# CHECK: stablehlo.compare GT
# CHECK: stablehlo.reduce{{.*}}applies stablehlo.or
# CHECK: } do {
# CHECK: stablehlo.divide
# CHECK: stablehlo.select
# CHECK: "stablehlo.scatter"
# CHECK: %[[P1:.*]]:5 = stablehlo.while(%iterArg = %[[P]]#0,
# CHECK: stablehlo.while(%iterArg = %[[P1]]#0,
# CHECK: %[[Q:.*]]:10 = stablehlo.while(%{{.*}}) : tensor<i64>, tensor<?xi1>
# CHECK: %[[Q1:.*]]:10 = stablehlo.while(%iterArg = %[[Q]]#0,
# CHECK: stablehlo.while(%iterArg = %[[Q1]]#0,
# CHECK: %[[S:.*]]:5 = stablehlo.while(%{{.*}}) : tensor<i64>, tensor<?xi1>
# CHECK: %[[S1:.*]]:5 = stablehlo.while(%iterArg = %[[S]]#0,
# CHECK: stablehlo.while(%iterArg = %[[S1]]#0,
# CHECK: "stablehlo.if"
# CHECK-NOT: stablehlo.dot_general
# CHECK: stablehlo.while
# CHECK: stablehlo.compare LT
# CHECK: } do {
# CHECK: stablehlo.dynamic_slice %{{.*}}, %iterArg, %{{.*}}, sizes = [1, 25] : (tensor<25x25xf64>, tensor<i64>, tensor<i64>) -> tensor<1x25xf64>
# CHECK-NOT: stablehlo.while
# CHECK-NOT: stablehlo.dot_general
# CHECK: chlo.erfc
# Where no more than a quarter of the elements need it (`regions.where_few`), the same
# over a quarter of the slots: the positions of those elements scattered into them, a
# and x gathered from there (nothing else: the sign is a constant), the loop, and its
# values scattered back.
# CHECK: "stablehlo.scatter"
# CHECK-COUNT-2: "stablehlo.dynamic_gather"
# CHECK-NOT: "stablehlo.dynamic_gather"
# CHECK: stablehlo.while
# CHECK: stablehlo.dynamic_slice %{{.*}}, %iterArg, %{{.*}}, sizes = [1, 25]
# CHECK: chlo.erfc
# CHECK: "stablehlo.scatter"
print_ir("gammainc", [a, x], [pt.gammainc(a, x)])

# gammainc and gammaincc of the same a and x, as STABLEHLO's rewrite pairs them
# (lowering/rewrites.py): one GammaIncPair, whose three loops and Temme's sum run once
# for both, with one erfc for each tail.
# CHECK-LABEL: TEST: gammainc_pair opt
# CHECK-COUNT-3: stablehlo.while({{.*}}) : tensor<i64>, tensor<?x128xi1>
# CHECK-NOT: stablehlo.while({{.*}}) : tensor<i64>, tensor<?x128xi1>
# CHECK: "stablehlo.if"
# CHECK: stablehlo.while(%iterArg = %c{{[_0-9]*}}, {{.*}}) : tensor<i64>, tensor<?xi1>
# CHECK-NOT: stablehlo.while
# CHECK-COUNT-2: chlo.erfc
# CHECK-NOT: stablehlo.while
# CHECK: return
print_ir("gammainc_pair", [a, x], Elemwise(gammainc_pair)(a, x))

# gammaincc's small-x series takes lgamma(1 + a) as lgamma(a) + log a (away from a = 0
# and 1), from the lgamma(a) it needs anyway: the module holds lgamma's steps once, each
# copy about 0.1 s of XLA's compile (its Stirling term log(2 pi) / 2 is added once).
# CHECK-LABEL: TEST: gammaincc_one_lgamma opt
# CHECK: %[[C:[a-z0-9_]+]] = stablehlo.constant dense<0.91893853320467278>
# CHECK: %[[B:[0-9]+]] = stablehlo.dynamic_broadcast_in_dim %[[C]],
# CHECK: stablehlo.add %[[B]],
# CHECK-NOT: %[[B]]{{[ ,)]}}
print_ir("gammaincc_one_lgamma", [a, x], [pt.gammaincc(a, x)])

# gammau (GammaU, Q times Gamma(a)) takes Gamma(a) from the lgamma(a) Q takes: again once.
# CHECK-LABEL: TEST: gammau_one_lgamma opt
# CHECK: %[[C:[a-z0-9_]+]] = stablehlo.constant dense<0.91893853320467278>
# CHECK: %[[B:[0-9]+]] = stablehlo.dynamic_broadcast_in_dim %[[C]],
# CHECK: stablehlo.add %[[B]],
# CHECK-NOT: %[[B]]{{[ ,)]}}
# CHECK-NOT: %[[C]]{{[ ,)]}}
print_ir("gammau_one_lgamma", [a, x], [pt.gammau(a, x)])

# Its gradient wrt a: PyTensor's ScalarLoops. Of 1,024 elements or more (an `if` on the
# size, which specialization folds) each compacts as the series do (rows of 128 first,
# their step count checked against the cap of 64), an element done at its `until` or
# once the loop's count reaches its n_steps; below that, one while whose
# elements stop on their own `until` (the carried done mask is updated with a select)
# and which carries no going mask beside it.
# CHECK-LABEL: TEST: gammainc_grad raw
# CHECK: %[[K:.*]] = stablehlo.constant dense<1024> : tensor<i64>
# CHECK-NEXT: %[[BIG:.*]] = stablehlo.compare GE, %{{.*}}, %[[K]], SIGNED
# CHECK-NEXT: "stablehlo.if"(%[[BIG]]) ({
# CHECK: %[[ROWS:.*]]:7 = "stablehlo.if"
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<?x128xi1>, tensor<?x128xf64>, tensor<?x128xf64>, tensor<?x128xi32>, tensor<?x128xf64>, tensor<?x128xi1>
# CHECK: %[[CAP:.*]] = stablehlo.constant dense<64> : tensor<i64>
# CHECK-NEXT: stablehlo.compare LT, %{{.*}}, %[[CAP]] :
# CHECK: %[[L:.*]]:7 = stablehlo.while(%iterArg = %[[ROWS]]#0, {{.*}}) : tensor<i64>, tensor<?xi1>, tensor<?xf64>, tensor<?xf64>, tensor<?xi32>, tensor<?xf64>, tensor<?xi1>
# CHECK: "stablehlo.scatter"
# CHECK: %[[L1:.*]]:7 = stablehlo.while(%iterArg = %[[L]]#0,
# CHECK: stablehlo.while(%iterArg = %[[L1]]#0,
# CHECK: stablehlo.while(%{{.*}}) : tensor<i64>, tensor<?xf64>, tensor<?xf64>, tensor<?xi32>, tensor<?xf64>, tensor<?xi1>
# CHECK: stablehlo.not
# CHECK: stablehlo.and
print_ir("gammainc_grad", [a, x], [pt.grad(pt.gammainc(a, x).sum(), a)], raw=True)

# betainc: Cephes' power series and its two continued fractions, three loops, each
# by rows first, then compacting. log B(a, b) takes the lgammas of a, b and a + b in one
# batch, the smaller's from them (one copy of lgamma's code where there were four).
b, x = pt.dvector("b"), pt.dvector("x")
# CHECK-LABEL: TEST: betainc opt
# CHECK: stablehlo.concatenate {{.*}} -> tensor<3x?xf64>
# CHECK-COUNT-3: stablehlo.while({{.*}}) : tensor<i64>, tensor<?x128xi1>
# CHECK-NOT: stablehlo.while({{.*}}) : tensor<i64>, tensor<?x128xi1>
# CHECK: return
print_ir("betainc", [a, b, x], [pt.betainc(a, b, x)])

# betaincinv: Newton on log I_x in t = logit(x), a while loop whose body evaluates I_x.
# log B(a, b) and I_x's log(small B(a, b)) come before it, as do the lgammas of the
# lopsided start's inverse incomplete gamma function: no lgamma code in any loop.
# CHECK-LABEL: TEST: betaincinv opt
# CHECK: %[[C:[a-z0-9_]+]] = stablehlo.constant dense<0.91893853320467278>
# CHECK: stablehlo.concatenate {{.*}} -> tensor<3x?xf64>
# CHECK: stablehlo.while
# CHECK-NOT: %[[C]]{{[ ,)]}}
print_ir("betaincinv", [a, b, x], [pt.betaincinv(a, b, x)])

# gammaincinv: Newton on log P in a while loop whose body evaluates P (nested loops).
# lgamma(a) and lgamma(a + 1) are one batch before the loop, which P and its density at
# each step read: the module holds lgamma's code once (Stirling's log(2 pi) / 2 added
# once), none of it in the loop.
# CHECK-LABEL: TEST: gammaincinv opt
# CHECK: %[[C:[a-z0-9_]+]] = stablehlo.constant dense<0.91893853320467278>
# CHECK: stablehlo.concatenate {{.*}} -> tensor<2x?xf64>
# CHECK: %[[B:[0-9]+]] = stablehlo.dynamic_broadcast_in_dim %[[C]],
# CHECK: stablehlo.add %[[B]],
# CHECK-NOT: %[[C]]{{[ ,)]}}
# CHECK: stablehlo.while
# CHECK-NOT: %[[C]]{{[ ,)]}}
# CHECK: stablehlo.while
# CHECK-NOT: %[[B]]{{[ ,)]}}
# CHECK-NOT: %[[C]]{{[ ,)]}}
print_ir("gammaincinv", [a, x], [pt.gammaincinv(a, x)])

# owens_t: Patefield & Tandy's six methods at fixed orders, unrolled and picked per
# element by select; no loop at all.
h, t = pt.dvector("h"), pt.dvector("t")
# CHECK-LABEL: TEST: owens_t opt
# CHECK-NOT: stablehlo.while
# CHECK: stablehlo.atan2
# CHECK-NOT: stablehlo.while
# CHECK: return
print_ir("owens_t", [h, t], [pt.owens_t(h, t)])
