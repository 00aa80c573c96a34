# RUN: %PYTHON %s | FileCheck %s
# Shape ops: static ops where PyTensor knows the dims, dynamic ones otherwise.
import pytensor.tensor as pt
from pytensor.graph.replace import vectorize_graph

from ir_printing import print_ir

x = pt.matrix("x")
s = pt.matrix("s", shape=(3, 4))
n = pt.lscalar("n")

# CHECK-LABEL: TEST: reshape_static raw
# CHECK: stablehlo.reshape %arg0 : (tensor<3x4xf64>) -> tensor<2x6xf64>
print_ir("reshape_static", [s], s.reshape((2, 6)), raw=True)

# CHECK-LABEL: TEST: reshape_runtime raw
# CHECK: stablehlo.dynamic_reshape %arg0, %{{.*}} : (tensor<?x?xf64>, tensor<2xi64>) -> tensor<?x?xf64>
print_ir("reshape_runtime", [x, n], x.reshape((n, -1)), raw=True)

# CHECK-LABEL: TEST: dimshuffle opt
# CHECK: stablehlo.transpose %arg0, dims = [1, 0] : (tensor<3x4xf64>) -> tensor<4x3xf64>
# CHECK: stablehlo.reshape {{.*}} -> tensor<4x1x3xf64>
print_ir("dimshuffle", [s], s.dimshuffle(1, "x", 0))

# CHECK-LABEL: TEST: shape raw
# CHECK: stablehlo.get_dimension_size %arg0, dim = 0
# CHECK: stablehlo.concatenate
print_ir("shape", [x], x.shape, raw=True)

# Blockwise(Reshape) with a shape per entry (einsum builds them): one reshape of the whole
# batch, after the entries' requests (their -1 resolved) are compared: their minimum and
# maximum over the 4 entries, taken one entry at a time; no loop.
# CHECK-LABEL: TEST: reshape_per_entry opt
# CHECK-NOT: stablehlo.while
# CHECK-COUNT-4: stablehlo.minimum %{{.*}}, %{{.*}} : tensor<{{(1x)?}}2xi64>
# CHECK-COUNT-4: stablehlo.maximum %{{.*}}, %{{.*}} : tensor<{{(1x)?}}2xi64>
# CHECK: stablehlo.dynamic_reshape %arg0, %{{.*}} : (tensor<4x6xf64>, tensor<3xi64>) -> tensor<4x?x?xf64>
# CHECK-NOT: stablehlo.while
core, request = pt.dvector("core"), pt.lvector("request", shape=(2,))
xb, sb = pt.matrix("xb", shape=(4, 6)), pt.lmatrix("sb", shape=(4, 2))
print_ir("reshape_per_entry", [xb, sb], vectorize_graph(core.reshape(request, ndim=2), {core: xb, request: sb}))
