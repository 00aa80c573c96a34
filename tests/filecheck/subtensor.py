# RUN: %PYTHON %s | FileCheck %s
# Indexing: static slices, run-time bounds, gather/scatter with explicit dimension numbers.
import numpy as np
import pytensor.tensor as pt

from ir_printing import print_ir
from lowering import LoweringOptions

s = pt.matrix("s", shape=(4, 5))
x = pt.matrix("x")
n = pt.lscalar("n")
iv = pt.lvector("iv")

# CHECK-LABEL: TEST: static_slice raw
# CHECK: stablehlo.slice %arg0 [1:3, 0:5:2]
print_ir("static_slice", [s], s[1:3, ::2], raw=True)

# A negative step reverses, then slices forwards.
# CHECK-LABEL: TEST: negative_step opt
# CHECK: stablehlo.reverse %arg0, dims = [1]
# CHECK: stablehlo.slice %{{.*}} [1:3, 0:5:2]
print_ir("negative_step", [s], s[1:3, ::-2])

# Run-time bounds: numpy's clipping computed in the module, then a strided slice
# whose result dim stays `?` (the runtime specializes on n's value).
# CHECK-LABEL: TEST: runtime_stop raw
# CHECK: stablehlo.clamp
# CHECK: stablehlo.real_dynamic_slice %arg0, {{.*}} -> tensor<?x?xf64>
print_ir("runtime_stop", [x, n], x[:n], raw=True)

# A run-time integer index: a static-size dynamic_slice, plus an IndexError flag from @main.
# CHECK-LABEL: TEST: runtime_index opt
# CHECK: stablehlo.dynamic_slice %arg0, %{{.*}}, %{{.*}}, sizes = [1, 5]
# CHECK: return %{{.*}}, %{{.*}} : tensor<5xf64>, tensor<1xi1>
print_ir("runtime_index", [s, n], s[n])

# Advanced indices: one gather; the index vector is the last dim of the indices.
# CHECK-LABEL: TEST: gather raw
# CHECK: "stablehlo.gather"(%arg0, %{{.*}}) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 1>, slice_sizes = array<i64: 4, 1>}>
print_ir("gather", [s, iv], s[:, iv], raw=True)

# Two advanced indices separated by a slice: the broadcast index dims go first.
# CHECK-LABEL: TEST: gather_front opt
# CHECK: stablehlo.concatenate {{.*}} dim = 1 : {{.*}} -> tensor<?x2xi64>
# CHECK: #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0, 2], start_index_map = [0, 2], index_vector_dim = 1>
t = pt.tensor3("t", shape=(3, 4, 5))
print_ir("gather_front", [t, iv], t[iv, :, iv])

# Constant indices (a PyMC model's group index) are wrapped and checked when lowering:
# against static sizes no flag is left; against a run-time size, one comparison of
# their maximum.
# CHECK-LABEL: TEST: constant_index opt
# CHECK: %[[IDX:.*]] = stablehlo.constant dense<{{\[}}[3], [3], [0]]> : tensor<3x1xi64>
# CHECK: "stablehlo.gather"(%arg0, %[[IDX]])
# CHECK: return %{{.*}} : tensor<3x5xf64>
print_ir("constant_index", [s], s[np.array([3, -1, 0])])

# CHECK-LABEL: TEST: constant_index_runtime_size opt
# CHECK: %[[MAX:.*]] = stablehlo.constant dense<3> : tensor<i64>
# CHECK: stablehlo.compare GE, %[[MAX]], %{{.*}}, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
# CHECK-NOT: stablehlo.select
# CHECK: return %{{.*}}, %{{.*}} : tensor<3x?xf64>, tensor<1xi1>
print_ir("constant_index_runtime_size", [x], x[np.array([3, 1, 0])])

# inc_subtensor with advanced indices: a scatter whose combiner adds (np.add.at).
# CHECK-LABEL: TEST: scatter_add opt
# CHECK: "stablehlo.scatter"(%arg0, %{{.*}}, %{{.*}}) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}>
# CHECK-NEXT: ^bb0(%[[CUR:.*]]: tensor<f64>, %[[UPD:.*]]: tensor<f64>):
# CHECK-NEXT: stablehlo.add %[[CUR]], %[[UPD]]
print_ir("scatter_add", [s, iv], pt.inc_subtensor(s[iv], 1.0))

# AdvancedIncSubtensor1 does not broadcast y along a dim its type leaves unknown: one
# flag, y's rows of length 1 against more than one index, or its columns of length 1
# (x's are 5), raises PyTensor's ValueError at the call; beside it, the indices' range.
# CHECK-LABEL: TEST: inc1_runtime_broadcast opt
# CHECK: %[[COLS:.*]] = stablehlo.get_dimension_size %arg1, dim = 1
# CHECK: %[[ROWS:.*]] = stablehlo.get_dimension_size %arg1, dim = 0
# CHECK: %[[N:.*]] = stablehlo.get_dimension_size %arg2, dim = 0
# CHECK: %[[WIDE:.*]] = stablehlo.compare EQ, %{{.*}}, %[[ONE:.*]], SIGNED
# CHECK: %[[TALL:.*]] = stablehlo.compare EQ, %{{.*}}, %[[ONE]], SIGNED
# CHECK: %[[MANY:.*]] = stablehlo.compare NE, %{{.*}}, %[[ONE]], SIGNED
# CHECK: %[[BOTH:.*]] = stablehlo.and %[[TALL]], %[[MANY]]
# CHECK: stablehlo.or %[[WIDE]], %[[BOTH]]
# CHECK: return %{{.*}}, %{{.*}} : tensor<4x5xf64>, tensor<2xi1>
from pytensor.tensor.subtensor import advanced_inc_subtensor1  # noqa: E402

print_ir("inc1_runtime_broadcast", [s, x, iv], advanced_inc_subtensor1(s, x, iv))

# set_subtensor: the combiner returns the update.
# CHECK-LABEL: TEST: scatter_set raw
# CHECK: "stablehlo.scatter"
# CHECK-NEXT: ^bb0(%{{.*}}: tensor<f64>, %[[UPD:.*]]: tensor<f64>):
# CHECK-NEXT: stablehlo.return %[[UPD]]
print_ir("scatter_set", [s, iv], pt.set_subtensor(s[iv], 1.0), raw=True)

# Lowered for CUDA, where a scatter's updates race: a scatter-max of update numbers finds
# the last update aimed at each position, each update is replaced by that one (a gather),
# and only then the set's scatter writes.
# CHECK-LABEL: TEST: scatter_set_cuda raw
# CHECK: %[[NUMBERS:.*]] = stablehlo.iota dim = 0 : tensor<3xi64>
# CHECK: %[[OWNER:.*]] = "stablehlo.scatter"(%{{.*}}, %[[INDEX:.*]], %[[NUMBERS]])
# CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<i64>, %[[B:.*]]: tensor<i64>):
# CHECK-NEXT: stablehlo.maximum %[[A]], %[[B]]
# CHECK: %[[LAST:.*]] = "stablehlo.gather"(%[[OWNER]], %[[INDEX]])
# CHECK: %[[LAST2:.*]] = stablehlo.reshape %[[LAST]]
# CHECK: %[[ROWS:.*]] = "stablehlo.gather"(%arg1, %[[LAST2]])
# CHECK: "stablehlo.scatter"(%arg0, %[[INDEX]], %[[ROWS]])
# CHECK-NEXT: ^bb0(%{{.*}}: tensor<f64>, %[[UPD:.*]]: tensor<f64>):
# CHECK-NEXT: stablehlo.return %[[UPD]]
r, jv = pt.matrix("r", shape=(3, 5)), pt.lvector("jv", shape=(3,))
print_ir("scatter_set_cuda", [s, r, jv], pt.set_subtensor(s[jv], r), raw=True, options=LoweringOptions(platform="cuda"))

# Basic writes with unit steps: dynamic_update_slice at the (run-time) start.
# CHECK-LABEL: TEST: set_basic opt
# CHECK: stablehlo.dynamic_update_slice %arg0, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x5xf64>, tensor<1x2xf64>, tensor<i64>, tensor<i64>)
print_ir("set_basic", [s, n], pt.set_subtensor(s[n, 1:3], 1.0))

# A mask computed at run time is its nonzero(): a running count (here, of unknown
# length, log2(n) rounds of a while) ranks the True elements, a scatter puts each
# one's position at its rank, their count (a reduce) bounds a real_dynamic_slice whose
# size the runtime measures, and remainder/divide unravel them into one index per mask
# axis. One check: the mask's shape against x's (no range check on indices that cannot
# leave x).
# CHECK-LABEL: TEST: mask_read raw
# CHECK: stablehlo.compare NE, {{.*}} : (tensor<i64>, tensor<i64>) -> tensor<i1>
# CHECK: stablehlo.or {{.*}} : tensor<i1>
# CHECK: stablehlo.while
# CHECK: stablehlo.reduce({{.*}}) applies stablehlo.add
# CHECK: "stablehlo.scatter"
# CHECK: stablehlo.real_dynamic_slice
# CHECK: stablehlo.remainder
# CHECK: stablehlo.divide
# CHECK-NOT: applies stablehlo.or
# CHECK: "stablehlo.dynamic_gather"(%arg0
d, m = pt.matrix("d"), pt.matrix("m", dtype="bool")
print_ir("mask_read", [d, m], d[m], raw=True)
