# RUN: %PYTHON %s | FileCheck %s
# np.convolve as one stablehlo.convolution of the reversed kernel (XLA correlates); "valid"
# slices the middle of "full"; Blockwise batches are feature groups of the same convolution.
import pytensor.tensor as pt
from pytensor.tensor.signal import convolve1d, convolve2d

from ir_printing import print_ir

a, v = pt.vector("a", shape=(6,)), pt.vector("v", shape=(3,))

# CHECK-LABEL: TEST: full opt
# CHECK: stablehlo.reverse {{.*}}, dims = [1] : tensor<1x3xf64>
# CHECK: stablehlo.convolution({{.*}}) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {pad = {{\[\[}}2, 2]]}
# CHECK-SAME: -> tensor<1x1x8xf64>
print_ir("full", [a, v], [convolve1d(a, v, mode="full")])

# CHECK-LABEL: TEST: valid opt
# CHECK: stablehlo.convolution
# CHECK: stablehlo.slice {{.*}} [0:1, 2:6]
print_ir("valid", [a, v], [convolve1d(a, v, mode="valid")])

# CHECK-LABEL: TEST: batched opt
# CHECK: stablehlo.convolution
# CHECK-SAME: feature_group_count = 4 : i64
# CHECK-SAME: -> tensor<1x4x8xf64>
b, w = pt.matrix("b", shape=(4, 6)), pt.matrix("w", shape=(4, 3))
print_ir("batched", [b, w], [convolve1d(b, w, mode="full")])

# A batch of unknown size cannot be a feature group count (an attribute): one convolution
# of a single group per entry, in a loop over the batch (each entry's flags: a, v empty).
# CHECK-LABEL: TEST: unknown_batch raw
# CHECK: stablehlo.while
# CHECK: func.call @Convolve1d_entry({{.*}}) : (tensor<?xf64>, tensor<?xf64>) -> (tensor<?xf64>, tensor<i1>, tensor<i1>)
# CHECK: func.func private @Convolve1d_entry
# CHECK: stablehlo.dynamic_conv
# CHECK-SAME: feature_group_count = 1 : i64
m, k = pt.matrix("m"), pt.matrix("k")
print_ir("unknown_batch", [m, k], [convolve1d(m, k, mode="full")], raw=True)

# Lowered for CUDA, a complex convolution is four real ones (XLA's GPU backend convolves
# real numbers only): re(a)*re(v) - im(a)*im(v), re(a)*im(v) + im(a)*re(v).
# CHECK-LABEL: TEST: complex_for_cuda opt
# CHECK-NOT: stablehlo.convolution{{.*}}complex
# CHECK-COUNT-4: stablehlo.convolution({{.*}}) -> tensor<1x1x8xf32>
# CHECK: stablehlo.complex {{.*}} : tensor<1x8xcomplex<f32>>
from lowering import LoweringOptions  # noqa: E402

c, w = pt.vector("c", shape=(6,), dtype="complex64"), pt.vector("w", shape=(3,), dtype="complex64")
print_ir("complex_for_cuda", [c, w], [convolve1d(c, w, mode="full")], options=LoweringOptions(platform="cuda"))

# A kernel with static rows and run-time columns (`expand_dims` of a vector): the padding
# operand holds the static dim's edge (0) beside the run-time one's, a (2, 2) constant-and-
# computed pad for one dynamic_conv.
# CHECK-LABEL: TEST: row_kernel raw
# CHECK: %[[ROWS:.*]] = stablehlo.concatenate %[[ZERO:.*]], %[[ZERO]], dim = 1 : (tensor<1x1xi64>, tensor<1x1xi64>) -> tensor<1x2xi64>
# CHECK: %[[COLS:.*]] = stablehlo.concatenate %[[EDGE:.*]], %[[EDGE]], dim = 1 : (tensor<1x1xi64>, tensor<1x1xi64>) -> tensor<1x2xi64>
# CHECK: %[[PAD:.*]] = stablehlo.concatenate %[[ROWS]], %[[COLS]], dim = 0 : (tensor<1x2xi64>, tensor<1x2xi64>) -> tensor<2x2xi64>
# CHECK: "stablehlo.dynamic_conv"(%{{.*}}, %{{.*}}, %[[PAD]])
# CHECK-SAME: (tensor<1x1x3x8xf64>, tensor<1x1x1x?xf64>, tensor<2x2xi64>) -> tensor<1x1x3x?xf64>
d8, kv = pt.matrix("d8", shape=(3, 8)), pt.vector("kv")
print_ir("row_kernel", [d8, kv], [convolve2d(d8, pt.expand_dims(kv, 0), mode="full")], raw=True)
