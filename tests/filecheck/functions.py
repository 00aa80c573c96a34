# RUN: %PYTHON %s | FileCheck %s
# OpFromGraph: a private function per inner graph, called where applied; the default
# pipeline inlines it. Constant operands are bound inside (the function loses that arg).
import numpy as np
import pytensor.tensor as pt
from jax.extend.mlir import ir
from pytensor.compile.builders import OpFromGraph

from ir_printing import print_ir
from lowering._jax_internal import make_ir_context
from lowering.passes import run_pipeline

a, b = pt.vector("a"), pt.vector("b")
op = OpFromGraph([a, b], [pt.exp(a) * b], name="scaled_exp")
x = pt.vector("x")

# CHECK-LABEL: TEST: ofg raw
# CHECK: func.func public @main(%arg0: tensor<?xf64>) -> tensor<3xf64>
# CHECK: call @scaled_exp(%arg0) : (tensor<?xf64>) -> tensor<3xf64>
# CHECK: func.func private @scaled_exp(%arg0: tensor<?xf64>) -> tensor<3xf64>
# CHECK: stablehlo.exponential %arg0
# CHECK: stablehlo.constant dense<2.000000e+00> : tensor<3xf64>
print_ir("ofg", [x], [op(x, pt.constant(np.full(3, 2.0)))], raw=True)

# CHECK-LABEL: TEST: ofg opt
# CHECK-NOT: call
# CHECK: stablehlo.exponential %arg0
# CHECK-NOT: func.func private
print_ir("ofg", [x], [op(x, x)])

# Blockwise(OpFromGraph) whose inner graph sizes blocks by its input's shape: vectorized
# with that shape unbatched, so the zeros, the eye and the block writes cover the whole
# batch in one private function; no loop over the entries.
from pytensor.graph.replace import vectorize_graph

m = pt.matrix("m")
k = m.shape[0]
blocks = pt.set_subtensor(pt.set_subtensor(pt.zeros((2 * k, 2 * k))[:k, :k], m)[k:, k:], pt.eye(k))
mb = pt.tensor("mb", shape=(5, 3, 3))
# CHECK-LABEL: TEST: ofg_batched raw
# CHECK: call @OpFromGraph_batched
# CHECK-NOT: stablehlo.while
# CHECK-LABEL: TEST: ofg_batched opt
# CHECK-NOT: stablehlo.while
# CHECK: stablehlo.dynamic_update_slice %{{.*}}, %arg0, {{.*}} : (tensor<5x6x6xf64>, tensor<5x3x3xf64>,
# CHECK: stablehlo.broadcast_in_dim %{{.*}}, dims = [1, 2] : (tensor<3x3xf64>) -> tensor<5x3x3xf64>
# CHECK: stablehlo.dynamic_update_slice
# CHECK-NOT: stablehlo.while
# CHECK: return {{.*}} : tensor<5x6x6xf64>
batched_blocks = [vectorize_graph(OpFromGraph([m], [blocks])(m), {m: mb})]
print_ir("ofg_batched", [mb], batched_blocks, raw=True)
print_ir("ofg_batched", [mb], batched_blocks)

# fold-constant-reduce (part of the specialization loop) evaluates reduces of constants.
# CHECK-LABEL: TEST: fold_constant_reduce
# CHECK: stablehlo.constant dense<7> : tensor<i64>
# CHECK-NOT: stablehlo.reduce
print("TEST: fold_constant_reduce")
with make_ir_context():
    module = ir.Module.parse("""
    func.func public @main() -> tensor<i64> {
      %c = stablehlo.constant dense<[3, 4]> : tensor<2xi64>
      %i = stablehlo.constant dense<0> : tensor<i64>
      %0 = stablehlo.reduce(%c init: %i) applies stablehlo.add across dimensions = [0] : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
      return %0 : tensor<i64>
    }""")
    run_pipeline(module, "builtin.module(fold-constant-reduce,canonicalize)")
    print(module)

# wrap_jax: JAX's own lowering of the user's function becomes a private function of ours.
# CHECK-LABEL: TEST: wrap_jax raw
# CHECK: call @jax_main
# CHECK: func.func private @jax_main(%arg0: tensor<3xf32>) -> tensor<3xf32>
# CHECK: stablehlo.cosine %arg0
import jax.numpy as jnp
from pytensor import wrap_jax

jcos = wrap_jax(lambda v: jnp.cos(v) * 2)
xj = pt.vector("xj", shape=(3,), dtype="float32")
print_ir("wrap_jax", [xj], [jcos(xj)], raw=True)

# Pad in reflect mode (an OpFromGraph): the padded axis' length is checked before
# PyTensor's graph divides by it less one (1: ValueError naming the axis; 0: numpy's
# "can't extend empty axis"), where integer division by zero would give 0 and the axis
# would come back unpadded.
# CHECK-LABEL: TEST: pad_reflect opt
# CHECK-DAG: %[[ZERO:[a-z_0-9]+]] = stablehlo.constant dense<0> : tensor<i64>
# CHECK-DAG: %[[ONE:[a-z_0-9]+]] = stablehlo.constant dense<1> : tensor<i64>
# CHECK: %[[N:[0-9]+]] = stablehlo.get_dimension_size %arg0, dim = 0
# CHECK-NEXT: %[[LEN:[0-9]+]] = stablehlo.convert %[[N]]
# CHECK-NEXT: stablehlo.compare NE, %[[LEN]], %[[ONE]], SIGNED
# CHECK-NEXT: stablehlo.compare GT, %[[LEN]], %[[ZERO]], SIGNED
v = pt.vector("v")
print_ir("pad_reflect", [v], [pt.pad(v, 2, mode="reflect")])

# Pad in wrap mode with a width known at the call only: the module is specialized to
# that width before it runs, so PyTensor's division of the width by the axis' length
# divides by at least 1 (where the length is 0 the check above raises; a quotient by 0
# did not fold, and the specialization failed with an MLIR message instead).
# CHECK-LABEL: TEST: pad_wrap_width opt
# CHECK-DAG: %[[ONE:[a-z_0-9]+]] = stablehlo.constant dense<1> : tensor<i64>
# CHECK: %[[N:[0-9]+]] = stablehlo.get_dimension_size %arg0, dim = 0
# CHECK-NEXT: %[[LEN:[0-9]+]] = stablehlo.convert %[[N]]
# CHECK: stablehlo.maximum %[[LEN]], %[[ONE]] : tensor<i64>
# CHECK: stablehlo.remainder
# CHECK: stablehlo.divide
w = pt.lscalar("w")
print_ir("pad_wrap_width", [v, w], [pt.pad(v, w, mode="wrap")])
