# RUN: %PYTHON %s | FileCheck %s
# A Generator enters @main as a tensor<2xui32> Threefry key and leaves as the key after the
# draws. Each element's 64 bits are Threefry-2x32 of its flat index (a ui64 iota split in two
# words); the key schedule's parity constant is 0x1BD11BDA = 466688986. Outside loops the
# cipher's 20 rounds are unrolled; in a loop body (a rejection round) its five groups of
# four rounds are a while loop carrying the counters, the key schedule and the rotations,
# unless it ciphers 64 counters or fewer (a split key, a row's draws). Normal draws outside
# loops are Box and Muller's pairs of ceil(n / 2) uniforms from each of two ciphers, the
# second's counters the first's plus 2 here, computed in a loop of one trip (its results
# written out; that loop does not make the sampler run by chunks) and then joined.
# (Rice and skew-normal draws take both halves of the pairs as their two normals.) Where
# a sampler maps a uniform to its normal (the Wald's, below) a float64 normal is sqrt(2)
# erfinv(2u - 1), erfinv by Giles's three polynomials (in w - 3.125 below w = 6.25, then in
# sqrt(w) - 3.25 below 16, else sqrt(w) - 5), not XLA's.
import numpy as np
import pymc as pm
import pytensor.tensor as pt

from ir_printing import print_ir

rng = pt.random.type.random_generator_type("rng")

# CHECK-LABEL: TEST: normal raw RandomGeneratorType
# CHECK: func.func public @main(%arg0: tensor<2xui32>) -> (tensor<2xui32>, tensor<3xf64>
# CHECK: stablehlo.iota dim = 0 : tensor<2xui64>
# CHECK: stablehlo.constant dense<466688986> : tensor<ui32>
# CHECK: %[[SECOND:.*]] = stablehlo.iota dim = 0 : tensor<2xui64>
# CHECK: stablehlo.add %[[SECOND]], %{{.*}} : tensor<2xui64>
# CHECK-NOT: chlo.erf_inv
# CHECK: %[[PAIRS:.*]]:3 = stablehlo.while({{.*}}) : tensor<i1>, tensor<2xf64>, tensor<2xf64>
# CHECK: stablehlo.sqrt
# CHECK: stablehlo.return %c{{.*}} : tensor<i1>, tensor<2xf64>, tensor<2xf64>
# CHECK: %[[JOINED:.*]] = stablehlo.concatenate %[[PAIRS]]#1, %[[PAIRS]]#2, dim = 0 : (tensor<2xf64>, tensor<2xf64>) -> tensor<4xf64>
# CHECK: stablehlo.slice %[[JOINED]] [0:3] : (tensor<4xf64>) -> tensor<3xf64>
nxt, x = pt.random.normal(0, 1, size=(3,), rng=rng).owner.outputs
print_ir("normal", [rng], [nxt, x], raw=True)

# A size known only at run time: the counters are a dynamic_iota of the product of the dims.
# CHECK-LABEL: TEST: uniform_symbolic_size opt RandomGeneratorType int64[]
# CHECK: stablehlo.dynamic_iota {{.*}} -> tensor<?xui64>
# CHECK: stablehlo.dynamic_reshape {{.*}} -> tensor<?x2xui64>
n = pt.lscalar("n")
nxt, x = pt.random.uniform(size=(n, 2), rng=rng).owner.outputs
print_ir("uniform_symbolic_size", [rng, n], [nxt, x])

# Gamma: Marsaglia-Tsang's rejection. Of a size known only at run time, the module holds
# two ways, chosen by the size (specialized to one, it keeps one). Below 16,384 elements,
# by rows of 16: a loop over the rows, each running its own rounds (a loop carrying its
# counters' offset, the elements still pending, the accepted values, whether there is a
# next round and that round's numbers; the cipher of 32 counters unrolled, so no loop of
# its own; the round's 8 pairs of normals written by a loop of one trip), and writing its
# row back. From 16,384, rounds over the whole tensor (carrying
# the key; the cipher of the round's draws a loop of four-round groups, that of the key's
# split, two counters, unrolled), then it compacts once: a prefix
# sum of the pending mask (`prefix_scan`, a loop of gathers) slots the pending elements,
# a scatter writes their positions, the rounds go on over them (by rows, or whole rounds
# from 16 * 16,384) and a scatter writes their draws back.
# CHECK-LABEL: TEST: gamma opt RandomGeneratorType float64[?]
# CHECK: "stablehlo.if"
# CHECK-NOT: x65536x
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<?x16xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<ui64>, tensor<16xi1>, tensor<16xf64>, tensor<i1>, tensor<16xf64>, tensor<16xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<i1>, tensor<8xf64>, tensor<8xf64>
# CHECK-NOT: stablehlo.while
# CHECK: stablehlo.dynamic_update_slice {{.*}} -> tensor<?x16xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<2xui32>, tensor<?xi1>, tensor<?xf64>, tensor<i1>
# CHECK: stablehlo.while({{.*}}) : tensor<ui32>, tensor<?xui32>, tensor<?xui32>, tensor<ui32>
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<?x1xi32>
# CHECK: "stablehlo.scatter"
# CHECK: }) : (tensor<?xi32>, tensor<?x1xi32>, tensor<?xi32>) -> tensor<?xi32>
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<?x16xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<2xui32>, tensor<?xi1>, tensor<?xf64>, tensor<i1>
# CHECK: "stablehlo.scatter"
# CHECK: }) : (tensor<?xf64>, tensor<?x1xi32>, tensor<?xf64>) -> tensor<?xf64>
a = pt.dvector("a")
nxt, x = pt.random.gamma(a, scale=1.0, rng=rng).owner.outputs
print_ir("gamma", [rng, a], [nxt, x])

# Of a size known when lowering (20,000), the loop compacts: rounds over the whole tensor
# while more than 1/16 of it is pending, then a prefix sum (by blocks of 16: a reduce_window
# in each, a loop over the 1,250 blocks' totals) gives each pending element its slot, a
# scatter writes their positions there, gathers read their parameters, the rounds go on
# over those 1,250 elements by rows (padded to 79 rows of 16), and a scatter writes their
# draws back.
# CHECK-LABEL: TEST: gamma_static_size opt
# CHECK: stablehlo.while({{.*}}) : tensor<2xui32>, tensor<20000xi1>, tensor<20000xf64>, tensor<i1>
# CHECK: "stablehlo.reduce_window"({{.*}}window_dimensions = array<i64: 1, 1, 16, 1>
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<1250x1xi32>
# CHECK: "stablehlo.scatter"
# CHECK: }) : (tensor<1250xi32>, tensor<20000x1xi32>, tensor<20000xi32>) -> tensor<1250xi32>
# CHECK: "stablehlo.gather"({{.*}}-> tensor<1250xf64>
# CHECK: stablehlo.pad {{.*}} high = [14], {{.*}} -> tensor<1264xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<79x16xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<ui64>, tensor<16xi1>, tensor<16xf64>, tensor<i1>, tensor<16xf64>, tensor<16xf64>
# CHECK: stablehlo.dynamic_update_slice {{.*}} -> tensor<79x16xf64>
# CHECK: "stablehlo.scatter"
# CHECK: }) : (tensor<20000xf64>, tensor<1250x1xi32>, tensor<1250xf64>) -> tensor<20000xf64>
nxt, x = pt.random.gamma(2.5, scale=1.0, size=20_000, rng=rng).owner.outputs
print_ir("gamma_static_size", [rng], [nxt, x])

# Past 196,608 elements of a static size, a sampler that loops runs chunk by chunk: 300,000
# gammas in 5 chunks of 60,000. A chunk slices its parameters (a vector here, broadcast to
# the size once) and runs the whole sampler on them, its cipher outside the rounds unrolled:
# whole rounds over the chunk, its pending elements slotted into 3,750, rows over those (235
# rows of 16), scattered back. Each chunk's draws are written in the next iteration, the
# last chunk's after the loop.
# CHECK-LABEL: TEST: gamma_chunks opt
# CHECK: stablehlo.broadcast_in_dim {{.*}} : (tensor<?xf64>) -> tensor<300000xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<300000xf64>, tensor<60000xf64>
# CHECK: stablehlo.dynamic_update_slice {{.*}} : (tensor<300000xf64>, tensor<60000xf64>, tensor<i64>) -> tensor<300000xf64>
# CHECK: stablehlo.dynamic_slice {{.*}} sizes = [60000] : (tensor<300000xf64>, tensor<i64>) -> tensor<60000xf64>
# CHECK-NOT: stablehlo.while({{.*}}) : tensor<ui32>
# CHECK: stablehlo.while({{.*}}) : tensor<2xui32>, tensor<60000xi1>, tensor<60000xf64>, tensor<i1>
# CHECK: }) : (tensor<3750xi32>, tensor<60000x1xi32>, tensor<60000xi32>) -> tensor<3750xi32>
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<235x16xf64>
# CHECK: }) : (tensor<60000xf64>, tensor<3750x1xi32>, tensor<3750xf64>) -> tensor<60000xf64>
# CHECK: stablehlo.return {{.*}} : tensor<i64>, tensor<300000xf64>, tensor<60000xf64>
# CHECK: stablehlo.dynamic_update_slice {{.*}} : (tensor<300000xf64>, tensor<60000xf64>, tensor<i64>) -> tensor<300000xf64>
a = pt.dvector("a")
nxt, x = pt.random.gamma(a, scale=1.0, size=300_000, rng=rng).owner.outputs
print_ir("gamma_chunks", [rng, a], [nxt, x])

# A sampler without loops draws over the whole tensor at any size: the normals' loop of one
# trip, over 500,000 pairs, does not count.
# CHECK-LABEL: TEST: normal_large opt
# CHECK-NOT: stablehlo.dynamic_slice
# CHECK: stablehlo.while({{.*}}) : tensor<i1>, tensor<500000xf64>, tensor<500000xf64>
# CHECK-NOT: stablehlo.while
# CHECK-NOT: stablehlo.dynamic_slice
# CHECK: return {{.*}} tensor<1000000xf64>
nxt, x = pt.random.normal(0, 1, size=1_000_000, rng=rng).owner.outputs
print_ir("normal_large", [rng], [nxt, x])

# The Wald sampler's uniforms reach its draws by many paths, and XLA:CPU's fused kernels
# would cipher them again for each: they are ciphered in a loop of one trip (a flag its body
# clears), its cipher a loop of four-round groups over the 200 counters, and written out.
# Its normal is erfinv's (Giles's polynomials' bounds among the constants; no chlo.erf_inv).
# CHECK-LABEL: TEST: wald opt
# CHECK-DAG: stablehlo.constant dense<1.600000e+01> : tensor<100xf64>
# CHECK-DAG: stablehlo.constant dense<6.250000e+00> : tensor<100xf64>
# CHECK-DAG: stablehlo.constant dense<3.125000e+00> : tensor<100xf64>
# CHECK-NOT: chlo.erf_inv
# CHECK: stablehlo.while({{.*}}) : tensor<i1>, tensor<100xf64>, tensor<100xf64>
# CHECK: stablehlo.return %{{[^,]*}} : tensor<i1>
# CHECK: stablehlo.while({{.*}}) : tensor<ui32>, tensor<200xui32>, tensor<200xui32>
# CHECK: stablehlo.return %c{{.*}} : tensor<i1>, tensor<100xf64>, tensor<100xf64>
nxt, x = pt.random.wald(1.0, 2.0, size=(100,), rng=rng).owner.outputs
print_ir("wald", [rng], [nxt, x])

# A categorical draw counts the partial sums of p below its uniform; the uniforms are written
# out first by a loop of one trip (its cipher a loop of its own there), since the count's
# per-category slices would cipher them again each.
# CHECK-LABEL: TEST: categorical opt
# CHECK: %[[U:.*]]:2 = stablehlo.while({{.*}}) : tensor<i1>, tensor<100xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<ui32>, tensor<100xui32>, tensor<100xui32>
# CHECK: stablehlo.return %c{{.*}} : tensor<i1>, tensor<100xf64>
# CHECK: "stablehlo.reduce_window"
# CHECK: stablehlo.broadcast_in_dim %[[U]]#1, dims = [0] : (tensor<100xf64>) -> tensor<100x2xf64>
# CHECK: stablehlo.compare LT, {{.*}} : (tensor<100x2xf64>, tensor<100x2xf64>) -> tensor<100x2xi1>
nxt, x = pt.random.categorical(np.array([0.3, 0.7]), size=(100,), rng=rng).owner.outputs
print_ir("categorical", [rng], [nxt, x])

# A sampler's several uniform tensors outside loops (the Rice's two normals) are ciphers of
# their own over consecutive ranges of counters, the second the first's iota plus 100: as
# slices of one cipher over 200 counters, read in one fused kernel, XLA:CPU ran them 7x slower.
# CHECK-LABEL: TEST: rice opt
# CHECK: %[[HUNDRED:.*]] = stablehlo.constant dense<100> : tensor<100xui64>
# CHECK-NOT: 200x
# CHECK: %[[IOTA:.*]] = stablehlo.iota dim = 0 : tensor<100xui64>
# CHECK-NOT: stablehlo.while
# CHECK: stablehlo.add %[[IOTA]], %[[HUNDRED]] : tensor<100xui64>
nxt, x = pm.Rice.dist(1.0, 1.0, size=(100,), rng=rng).owner.outputs
print_ir("rice", [rng], [nxt, x])

# Poisson below lam = 10 is an inversion: each element searches the CDF for its uniform
# (`evolve`). The search loop carries which elements are still searching, the counts, the
# probabilities and what is left of the uniforms, and takes four steps an iteration. Of a
# size known when lowering (20,000), it compacts as a rejection loop does: once at most 1/16
# still search, the rest of the search runs over 1,250 elements and its state is scattered back.
# CHECK-LABEL: TEST: poisson_static_size opt
# CHECK: stablehlo.while({{.*}}) : tensor<20000xi1>, tensor<20000xf64>, tensor<20000xf64>, tensor<20000xf64>
# CHECK-COUNT-4: stablehlo.divide {{.*}} : tensor<20000xf64>
# CHECK: stablehlo.return {{.*}} : tensor<20000xi1>, tensor<20000xf64>, tensor<20000xf64>, tensor<20000xf64>
# CHECK: }) : (tensor<1250xi32>, tensor<20000x1xi32>, tensor<20000xi32>) -> tensor<1250xi32>
# CHECK: stablehlo.while({{.*}}) : tensor<1250xi1>, tensor<1250xf64>, tensor<1250xf64>, tensor<1250xf64>
# CHECK-COUNT-3: }) : (tensor<20000xf64>, tensor<1250x1xi32>, tensor<1250xf64>) -> tensor<20000xf64>
nxt, x = pt.random.poisson(3.0, size=20_000, rng=rng).owner.outputs
print_ir("poisson_static_size", [rng], [nxt, x])
