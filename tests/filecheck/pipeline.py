# RUN: %PYTHON %s | FileCheck %s
# The default pipeline really simplifies StableHLO, and specialization makes `?` static.
import numpy as np
import pytensor.tensor as pt
from jax.extend.mlir import ir
from pytensor.graph.fg import FunctionGraph

from ir_printing import print_ir
from lowering import lower
from lowering._jax_internal import make_ir_context
from lowering.passes import run_pipeline

x = pt.vector("x", shape=(4,))
one, two = pt.constant(1.0), pt.constant(2.0)

# 1 + 2 folds to 3, the repeated product is computed once, x * 1 disappears.
# CHECK-LABEL: TEST: fold_cse opt
# CHECK: stablehlo.constant dense<3.000000e+00> : tensor<4xf64>
# CHECK: stablehlo.multiply %arg0
# CHECK-NOT: stablehlo.multiply
# CHECK: return
print_ir("fold_cse", [x], [x * (one + two) + x * (one + two) * one])

# Private functions are inlined by our Python pass, then dropped by symbol-dce.
# CHECK-LABEL: TEST: inline_private_calls
# CHECK-NOT: func.call
# CHECK: func.func public @main
# CHECK-NEXT: stablehlo.add %arg0, %arg0
# CHECK-NOT: @twice
print("TEST: inline_private_calls")
with make_ir_context():
    module = ir.Module.parse("""
    module {
      func.func private @twice(%a: tensor<3xf32>) -> tensor<3xf32> {
        %r = stablehlo.add %a, %a : tensor<3xf32>
        return %r : tensor<3xf32>
      }
      func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {
        %0 = func.call @twice(%x) : (tensor<3xf32>) -> tensor<3xf32>
        return %0 : tensor<3xf32>
      }
    }""")
    run_pipeline(module, "builtin.module(inline-private-calls,symbol-dce)")
    print(module)

# A shape-polymorphic module and its specialization to one call's shapes.
# CHECK-LABEL: TEST: specialize
# CHECK: func.func public @main(%arg0: tensor<?x?xf32>
# CHECK: stablehlo.dynamic_broadcast_in_dim
# CHECK: func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<1x3xf32>) -> tensor<2x3xf32>
# CHECK: stablehlo.broadcast_in_dim %arg1, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<2x3xf32>
# CHECK-NOT: dynamic
m = pt.matrix("m", dtype="float32")
row = pt.matrix("row", dtype="float32", shape=(1, None))
lowered = lower(FunctionGraph([m, row], [m + row]))
print("TEST: specialize")
print(lowered.as_text())
print(lowered.specialize(np.ones((2, 3), "float32"), np.ones((1, 3), "float32")))

# Sizes computed with ops shape refinement does not fold (here the negation in x[-n:])
# are folded by fold-shape-arithmetic, so a slice of a constant is static before MHLO's
# folder sees it (which would fold it into an invalid tensor<?xf64> constant).
# CHECK-LABEL: TEST: slice_of_constant_specialized
# CHECK: func.func public @main(%arg0: tensor<i64>) -> tensor<3xf64>
# CHECK: stablehlo.constant dense<[7.000000e+00, 8.000000e+00, 9.000000e+00]> : tensor<3xf64>
print("TEST: slice_of_constant_specialized")
k = pt.lscalar("k")
lowered = lower(FunctionGraph([k], [pt.constant(np.arange(10.0))[-k:]]))
print(lowered.specialize(np.int64(3)))

# A slice of a shape vector built by concatenate is read from the piece it lies in,
# whatever the other pieces are: the Alloc(0, n)[:stop] of a raw RK4 gradient sized the
# slice of a constant with one, and MHLO's folder, folding it, made an invalid
# tensor<?xf64> constant. A slice across pieces, or after a `?` piece, is left alone.
# CHECK-LABEL: TEST: slice_of_concatenate
# CHECK: %[[A:.*]] = stablehlo.constant dense<201> : tensor<1xi64>
# CHECK: %[[B:.*]] = stablehlo.concatenate %[[A]], %{{.*}}, %{{.*}}, dim = 0
# CHECK-NEXT: %[[PART:.*]] = stablehlo.slice %arg0 [1:3]
# CHECK-NEXT: %[[ACROSS:.*]] = stablehlo.slice %[[B]] [0:2]
# CHECK-NEXT: %[[AFTER:.*]] = stablehlo.slice %[[B]] [4:5]
# CHECK-NEXT: return %[[A]], %[[PART]], %[[ACROSS]], %[[AFTER]]
print("TEST: slice_of_concatenate")
with make_ir_context():
    module = ir.Module.parse("""
    func.func public @main(%y: tensor<3xi64>, %z: tensor<?xi64>)
        -> (tensor<1xi64>, tensor<2xi64>, tensor<2xi64>, tensor<1xi64>) {
      %c = stablehlo.constant dense<201> : tensor<1xi64>
      %0 = stablehlo.concatenate %c, %y, %z, dim = 0 : (tensor<1xi64>, tensor<3xi64>, tensor<?xi64>) -> tensor<?xi64>
      %1 = stablehlo.slice %0 [0:1] : (tensor<?xi64>) -> tensor<1xi64>
      %2 = stablehlo.slice %0 [2:4] : (tensor<?xi64>) -> tensor<2xi64>
      %3 = stablehlo.slice %0 [0:2] : (tensor<?xi64>) -> tensor<2xi64>
      %4 = stablehlo.slice %0 [4:5] : (tensor<?xi64>) -> tensor<1xi64>
      return %1, %2, %3, %4 : tensor<1xi64>, tensor<2xi64>, tensor<2xi64>, tensor<1xi64>
    }""")
    run_pipeline(module, "builtin.module(fold-shape-arithmetic)")
    print(module)

# A sum of outer products (one per row: MvNormal's gradient) becomes a dot over the rows,
# its result transposed to the sum's dim order; the product and its broadcasts go. A
# product whose summed dim one factor broadcasts stays a reduce. The runtime runs this
# only for executables that may contract multiply-adds (not STABLEHLO_NO_FMA's).
# CHECK-LABEL: TEST: contract_broadcast_products
# CHECK-NOT: tensor<20x4x3xf64>
# CHECK: %[[R:.*]] = stablehlo.reduce(%{{.*}} init: %{{.*}}) applies stablehlo.add across dimensions = [0, 2] : (tensor<20x3x4xf64>, tensor<f64>) -> tensor<3xf64>
# CHECK-NOT: tensor<20x4x3xf64>
# CHECK: %[[DOT:.*]] = stablehlo.dot_general %{{.*}}, %{{.*}}, contracting_dims = [0] x [0], precision = [HIGHEST, HIGHEST] : (tensor<20x3xf64>, tensor<20x4xf64>) -> tensor<3x4xf64>
# CHECK-NEXT: %[[T:.*]] = stablehlo.transpose %[[DOT]], dims = [1, 0] : (tensor<3x4xf64>) -> tensor<4x3xf64>
# CHECK-NEXT: return %[[T]], %[[R]]
print("TEST: contract_broadcast_products")
a = pt.tensor("a", shape=(20, 3), dtype="float64")
b = pt.tensor("b", shape=(20, 4), dtype="float64")
lowered = lower(FunctionGraph([a, b], [(a[:, None, :] * b[:, :, None]).sum(0), (a[:, :, None] * b[:, None, :]).sum((0, 2))]))
module = lowered.specialized_module(((20, 3), (20, 4)))
with module.context:
    run_pipeline(module, "builtin.module(contract-broadcast-products)")
print(module)

# A matrix product with its left operand contracted over its first dim (A.T @ B, here with
# a batch dim) gets that operand transposed in memory behind a barrier, the dot then
# contracting its last dim; the dims of B and of the result stay. A product that reads
# A's rows fewer than 64 times (a matrix-vector one, A.T @ v) and one already in order
# (A @ B) stay. The dot keeps its other attributes (an algorithm a JAX function set).
# The runtime runs this for executables on the CPU.
# CHECK-LABEL: TEST: transposed_lhs_in_memory
# CHECK: %[[T:.*]] = stablehlo.transpose %arg0, dims = [0, 2, 1] : (tensor<2x100x80xf64>) -> tensor<2x80x100xf64>
# CHECK-NEXT: %[[M:.*]] = stablehlo.optimization_barrier %[[T]] : tensor<2x80x100xf64>
# CHECK-NEXT: %[[P:.*]] = stablehlo.dot_general %[[M]], %arg1, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [HIGHEST, HIGHEST] : (tensor<2x80x100xf64>, tensor<2x100x64xf64>) -> tensor<2x80x64xf64>
# CHECK-NOT: optimization_barrier
# CHECK: stablehlo.dot_general %arg0, %arg2, batching_dims = [0] x [0], contracting_dims = [1] x [1]
# CHECK: stablehlo.dot_general %arg3, %arg1, batching_dims = [0] x [0], contracting_dims = [2] x [1]
# CHECK: %[[F:.*]] = stablehlo.optimization_barrier %{{.*}} : tensor<80x100xf32>
# CHECK-NEXT: stablehlo.dot_general %[[F]], %arg5, contracting_dims = [1] x [0], algorithm = <lhs_precision_type = f32
# CHECK: return %[[P]]
print("TEST: transposed_lhs_in_memory")
with make_ir_context():
    module = ir.Module.parse("""
    func.func public @main(%a: tensor<2x100x80xf64>, %b: tensor<2x100x64xf64>, %v: tensor<2x100x1xf64>,
                           %c: tensor<2x80x100xf64>, %e: tensor<100x80xf32>, %f: tensor<100x64xf32>)
        -> (tensor<2x80x64xf64>, tensor<2x80x1xf64>, tensor<2x80x64xf64>, tensor<80x64xf32>) {
      %p = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [1] x [1], precision = [HIGHEST, HIGHEST] : (tensor<2x100x80xf64>, tensor<2x100x64xf64>) -> tensor<2x80x64xf64>
      %q = stablehlo.dot_general %a, %v, batching_dims = [0] x [0], contracting_dims = [1] x [1] : (tensor<2x100x80xf64>, tensor<2x100x1xf64>) -> tensor<2x80x1xf64>
      %r = stablehlo.dot_general %c, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x80x100xf64>, tensor<2x100x64xf64>) -> tensor<2x80x64xf64>
      %g = stablehlo.dot_general %e, %f, contracting_dims = [0] x [0], algorithm = <lhs_precision_type = f32, rhs_precision_type = f32, accumulation_type = f32, lhs_component_count = 1, rhs_component_count = 1, num_primitive_operations = 1, allow_imprecise_accumulation = false> : (tensor<100x80xf32>, tensor<100x64xf32>) -> tensor<80x64xf32>
      return %p, %q, %r, %g : tensor<2x80x64xf64>, tensor<2x80x1xf64>, tensor<2x80x64xf64>, tensor<80x64xf32>
    }""")
    run_pipeline(module, "builtin.module(transposed-lhs-in-memory)")
    print(module)

# A scatter of nothing (an empty update tensor) gets its indices behind an
# optimization_barrier: MHLO's scatter folder crashes the process on empty constant
# indices (jaxlib 0.10.2), as a scatter at the cumsum of an empty vector built. Nothing
# folds it.
# CHECK-LABEL: TEST: guard_empty_scatters
# CHECK: %[[I:.*]] = stablehlo.optimization_barrier %{{.*}} : tensor<0x1xi64>
# CHECK: "stablehlo.scatter"(%{{.*}}, %[[I]], %{{.*}})
# CHECK: return
print("TEST: guard_empty_scatters")
with make_ir_context():
    module = ir.Module.parse("""
    func.func public @main(%x: tensor<3xi64>) -> tensor<3xi64> {
      %i = stablehlo.constant dense<> : tensor<0x1xi64>
      %u = stablehlo.constant dense<> : tensor<0xi64>
      %z = stablehlo.constant dense<0> : tensor<3xi64>
      %r = "stablehlo.scatter"(%z, %i, %u) ({
        ^bb0(%a: tensor<i64>, %b: tensor<i64>):
          %s = stablehlo.add %a, %b : tensor<i64>
          stablehlo.return %s : tensor<i64>
      }) {scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>} : (tensor<3xi64>, tensor<0x1xi64>, tensor<0xi64>) -> tensor<3xi64>
      %y = stablehlo.add %r, %x : tensor<3xi64>
      return %y : tensor<3xi64>
    }""")
    run_pipeline(module, "builtin.module(guard-empty-scatters,stablehlo-legalize-to-hlo,canonicalize,hlo-legalize-to-stablehlo)")
    print(module)

# atan2(y, 1), here chlo.atan's expansion, becomes `polynomial_atan(y)` (Cephes' rational
# function, no atan2): XLA (jaxlib 0.10.2) rewrites atan2 by a constant 1 into a
# vectorized atan that 512-bit vectors break. atan2 by anything else stays.
# CHECK-LABEL: TEST: atan2_of_one
# CHECK-NOT: stablehlo.atan2 %arg0
# CHECK: stablehlo.constant dense<2.4142135623730949>
# CHECK: stablehlo.divide
# CHECK: stablehlo.atan2 %arg1, %{{.*}} : tensor<16xf64>
# CHECK-NOT: stablehlo.atan2
# CHECK: return
print("TEST: atan2_of_one")
with make_ir_context():
    module = ir.Module.parse("""
    func.func public @main(%x: tensor<16xf64>, %y: tensor<16xf64>) -> (tensor<16xf64>, tensor<16xf64>) {
      %a = chlo.atan %x : tensor<16xf64> -> tensor<16xf64>
      %two = stablehlo.constant dense<2.0> : tensor<16xf64>
      %b = stablehlo.atan2 %y, %two : tensor<16xf64>
      return %a, %b : tensor<16xf64>, tensor<16xf64>
    }""")
    run_pipeline(module, "builtin.module(func.func(chlo-legalize-to-stablehlo),atan2-of-one)")
    print(module)

# An elementwise op runs before the reshapes and broadcasts that feed it, so that the two
# orders PyTensor leaves (exp of an expand_dims, expand_dims of an exp: PyMC's GP
# likelihood and its gradient) are one expression for `cse`; a broadcast scalar's log is
# taken once. An add of a reshape and a vector of its own stays as it is.
# CHECK-LABEL: TEST: elementwise_before_layout opt
# CHECK: stablehlo.log %arg0 : tensor<f64>
# CHECK: stablehlo.add %{{.*}}, %arg1 : tensor<1x3xf64>
# CHECK: stablehlo.exponential %arg0 : tensor<f64>
# CHECK-NOT: stablehlo.exponential
# CHECK-NOT: stablehlo.log
# CHECK: return
s = pt.scalar("s")
v = pt.matrix("v", shape=(1, 3))
padded = pt.shape_padleft(s, 2)
print_ir(
    "elementwise_before_layout", [s, v],
    [pt.exp(padded) * 2.0 + pt.shape_padleft(pt.exp(s), 2) * 2.0, pt.log(pt.alloc(s, 1, 3)) + v],
)

# A sum two of the graph's comparisons read is computed once, in a loop that runs once;
# every reader (both comparisons, the product) takes the loop's result. A sum compared
# once, a 0-d sum, and a sum only a clip compares (not the graph's comparison) stay as
# they are.
# CHECK-LABEL: TEST: compute_compared_once opt
# CHECK: %[[L:.*]]:2 = stablehlo.while
# CHECK: stablehlo.add
# CHECK: stablehlo.return %{{.*}}, %{{.*}} : tensor<i1>, tensor<4xf64>
# CHECK-NOT: stablehlo.while
# CHECK-DAG: stablehlo.compare GE, %[[L]]#1
# CHECK-DAG: stablehlo.compare LT, %[[L]]#1
# CHECK-DAG: stablehlo.multiply %[[L]]#1
# CHECK: return
v, w = pt.vector("v", shape=(4,)), pt.vector("w", shape=(4,))
total = v * w + v
small = v[0] * w[0] + v[0]
print_ir(
    "compute_compared_once", [v, w],
    [pt.ge(total, 0.0), pt.lt(total, 1.0), total * 3.0, pt.gt(small, 0.0), pt.gt(v - w, 0.0),
     pt.clip(v * w - w, 0.0, 1.0)],
)
