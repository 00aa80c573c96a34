# RUN: %PYTHON %s | FileCheck %s
import pytensor.tensor as pt

from ir_printing import print_ir

v = pt.scalar("v")
n = pt.lscalar("n")

# alloc with a run-time size broadcasts dynamically
# CHECK-LABEL: TEST: alloc_runtime raw
# CHECK: stablehlo.dynamic_broadcast_in_dim %arg0, %{{.*}}, dims = [] : (tensor<f64>, tensor<2xi64>) -> tensor<?x3xf64>
print_ir("alloc_runtime", [v, n], pt.alloc(v, n, 3), raw=True)

# and statically when sizes are constants
# CHECK-LABEL: TEST: alloc_static opt
# CHECK: stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<f64>) -> tensor<2x3xf64>
print_ir("alloc_static", [v], pt.alloc(v, 2, 3))

# CHECK-LABEL: TEST: make_vector opt
# CHECK: stablehlo.concatenate
print_ir("make_vector", [v], pt.stack([v, v * 2]))

# CHECK-LABEL: TEST: join raw
# CHECK: stablehlo.concatenate %arg0, %arg1, dim = 0 : (tensor<?x3xf64>, tensor<?x3xf64>) -> tensor<?x3xf64>
a = pt.matrix("a", shape=(None, 3))
b = pt.matrix("b", shape=(None, 3))
print_ir("join", [a, b], pt.join(0, a, b), raw=True)

# Split with constant sizes: static slices along the axis.
# CHECK-LABEL: TEST: split opt
# CHECK: stablehlo.slice %arg0 [0:1, 0:5]
# CHECK: stablehlo.slice %arg0 [1:4, 0:5]
xs = pt.matrix("xs", shape=(4, 5))
print_ir("split", [xs], pt.split(xs, [1, 3], n_splits=2, axis=0))

# ExtractDiag: the two axes moved last, then one gather of the (i, i + offset) pairs.
# CHECK-LABEL: TEST: extract_diag opt
# CHECK: stablehlo.transpose %arg0, dims = [1, 0, 2]
# CHECK: "stablehlo.gather"
# CHECK-SAME: collapsed_slice_dims = [1, 2]
# CHECK-SAME: -> tensor<4x3xf64>
xd = pt.tensor3("xd", shape=(3, 4, 5))
print_ir("extract_diag", [xd], [pt.diagonal(xd, offset=1, axis1=0, axis2=2)])

# TypeCastingOp (ViewOp, the gradient markers, xtensor's casts) passes its operand on.
# CHECK-LABEL: TEST: view_op raw
# CHECK: func.func public @main(%arg0: tensor<?xf64>)
# CHECK: %[[TWO:.*]] = stablehlo.convert {{.*}} -> tensor<?xf64>
# CHECK-NEXT: stablehlo.multiply %arg0, %[[TWO]]
from pytensor.compile.ops import view_op  # noqa: E402
from pytensor.gradient import zero_grad  # noqa: E402

xv = pt.vector("xv")
print_ir("view_op", [xv], zero_grad(view_op(xv)) * 2, raw=True)

# Choose: the index wrapped into [0, n) (mode "wrap"), then one gather of choices[a[I]][I].
# CHECK-LABEL: TEST: choose_wrap opt
# CHECK: stablehlo.remainder %arg0
# CHECK: "stablehlo.gather"(%arg1
# CHECK-SAME: collapsed_slice_dims = [0, 1, 2]
# CHECK-SAME: -> tensor<1x2x3xf64>
from pytensor.tensor.basic import choose, permute_row_elements  # noqa: E402

ca = pt.lmatrix("ca", shape=(2, 3))
cc = pt.tensor3("cc", shape=(4, 2, 3))
print_ir("choose_wrap", [ca, cc], choose(ca, cc, mode="wrap"))

# PermuteRowElements, inverse: each row scattered to the positions y names.
# CHECK-LABEL: TEST: permute_rows_inverse opt
# CHECK: "stablehlo.scatter"(%{{.*}}, %{{.*}}, %arg0)
# CHECK-SAME: inserted_window_dims = [0, 1]
# CHECK: }) : (tensor<3x5xf64>, tensor<3x5x2xi64>, tensor<3x5xf64>) -> tensor<3x5xf64>
px = pt.matrix("px", shape=(3, 5))
py = pt.lvector("py", shape=(5,))
print_ir("permute_rows_inverse", [px, py], permute_row_elements(px, py, inverse=True))
