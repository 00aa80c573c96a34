# RUN: %PYTHON %s | FileCheck %s
# Sorting is one stable stablehlo.sort whose comparator puts NaN last (numpy's order);
# argsort sorts an iota alongside. Cumulative ops are a reduce_window when the scanned
# dim is static and short, otherwise a loop over blocks of 16 rows.
import pytensor.tensor as pt
from pytensor.graph.fg import FunctionGraph

from ir_printing import print_ir
from lowering import lower
from lowering.regions import expand_in_order_scans

x = pt.matrix("x")

# CHECK-LABEL: TEST: sort raw
# CHECK: "stablehlo.sort"(%arg0) <{dimension = 1 : i64, is_stable = true}>
# CHECK: stablehlo.compare  LT
# CHECK: stablehlo.compare  NE
print_ir("sort", [x], [pt.sort(x)], raw=True)

# CHECK-LABEL: TEST: argsort raw
# CHECK: %[[IOTA:.*]] = stablehlo.dynamic_iota {{.*}} dim = 0 {{.*}} -> tensor<?x?xi64>
# CHECK: "stablehlo.sort"(%arg0, %[[IOTA]]) <{dimension = 0 : i64, is_stable = true}>
print_ir("argsort", [x], [pt.argsort(x, axis=0)], raw=True)

# CHECK-LABEL: TEST: cumsum_static opt
# CHECK: "stablehlo.reduce_window"(%arg0, %{{.*}}) <{padding = dense<{{\[\[}}0, 0], [4, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 1, 5>}>
xs = pt.matrix("xs", shape=(3, 5))
print_ir("cumsum_static", [xs], [pt.cumsum(xs, axis=1)])

# Of an axis of a size known only at run time: the (1, n, k) rows padded with 1s to blocks
# of 16, then a loop over the blocks carrying the running products of the k columns (as
# numpy multiplies: each row into the product before it), each step reading its block,
# multiplying its 16 rows in order and writing them back. The loop is marked for
# `expand_in_order_scans` (below).
# CHECK-LABEL: TEST: cumprod_dynamic opt
# CHECK: stablehlo.dynamic_reshape {{.*}} -> tensor<1x?x16x?xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<1x1x1x?xf64>, tensor<1x?x16x?xf64> attributes {pytensor.in_order_scan = "stablehlo.multiply"}
# CHECK: "stablehlo.dynamic_gather"(%iterArg_{{[0-9]+}}, {{.*}} -> tensor<1x1x16x?xf64>
# CHECK: stablehlo.multiply %iterArg_{{[0-9]+}}, {{.*}} : tensor<1x1x1x?xf64>
# CHECK-COUNT-15: stablehlo.multiply {{.*}} : tensor<1x1x1x?xf64>
# CHECK: stablehlo.concatenate {{.*}} dim = 2 : {{.*}} -> tensor<1x1x16x?xf64>
# CHECK: stablehlo.dynamic_update_slice %iterArg_{{[0-9]+}}, {{.*}} -> tensor<1x?x16x?xf64>
# CHECK-NOT: reduce_window
print_ir("cumprod_dynamic", [x], [pt.cumprod(x, axis=0)])

# A static axis longer than 256 is scanned by the blocks' loop too (1,000 rows: 63 blocks).
# CHECK-LABEL: TEST: cumsum_static_long opt
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<1x1x1x1xf64>, tensor<1x63x16x1xf64> attributes {pytensor.in_order_scan = "stablehlo.add"}
# CHECK: stablehlo.dynamic_slice {{.*}} sizes = [1, 1, 16, 1]
# CHECK-COUNT-16: stablehlo.add {{.*}} : tensor<1x1x1x1xf64>
# CHECK: stablehlo.dynamic_update_slice
long = pt.vector("long", shape=(1000,))
print_ir("cumsum_static_long", [long], [pt.cumsum(long)])

# Compiled without XLA:CPU's small-loop threshold (STABLEHLO_NO_FMA, a module with a long
# loop, a GPU), the loop would run each block through XLA's executor: `compile_module`
# makes it each block's total, its 16 rows added in order, a loop doubling its reach over
# those totals (row gathers), then each block's rows added in order from the total of the
# blocks before it.
# CHECK-LABEL: TEST: cumsum_static_long_expanded
# CHECK-NOT: in_order_scan
# CHECK-COUNT-16: stablehlo.slice {{.*}} -> tensor<1x63x1x1xf64>
# CHECK-COUNT-15: stablehlo.add {{.*}} : tensor<1x63x1x1xf64>
# CHECK: stablehlo.while({{.*}}) : tensor<i64>, tensor<63x1xf64>
# CHECK: "stablehlo.gather"
# CHECK-COUNT-16: stablehlo.add {{.*}} : tensor<1x63x1x1xf64>
# CHECK: stablehlo.concatenate {{.*}} dim = 2 : {{.*}} -> tensor<1x63x16x1xf64>
# CHECK-NOT: in_order_scan
lowered = lower(FunctionGraph([long], [pt.cumsum(long)], clone=True))
with lowered.lock, lowered.context:
    expand_in_order_scans(lowered.module.operation)
print("TEST: cumsum_static_long_expanded")
print(lowered.as_text())

# searchsorted: compare every value with every element (numpy's NaN order) and count.
# CHECK-LABEL: TEST: searchsorted opt
# CHECK: stablehlo.compare  LT
# CHECK: stablehlo.reduce({{.*}}) applies stablehlo.add across dimensions = [1] : (tensor<?x?xi64>, tensor<i64>) -> tensor<?xi64>
a, v = pt.vector("a"), pt.vector("v")
print_ir("searchsorted", [a, v], [pt.searchsorted(a, v)])

# Repeat with constant counts: one gather of the repeated positions.
# CHECK-LABEL: TEST: repeat opt
# CHECK: stablehlo.constant dense<{{\[\[}}0], [2], [2]]> : tensor<3x1xi64>
# CHECK: "stablehlo.gather"
r = pt.matrix("r", shape=(3, 2))
print_ir("repeat", [r], [pt.repeat(r, [1, 0, 2], axis=0)])

# Repeat with counts computed at run time: the counts' sum (of 3, added one by one: a
# reduce of so few is written out) sizes a zero vector with a spare slot; a scatter-add
# puts a 1 where each element's run ends, and the running sum of those (a while of shifted
# gathers), sliced to the sum that the runtime measures, is each output row's source,
# gathered from r.
# CHECK-LABEL: TEST: repeat_run_time opt
# CHECK: stablehlo.slice %[[COUNTS:.*]] [0:1] : (tensor<3xi64>) -> tensor<1xi64>
# CHECK: stablehlo.slice %[[COUNTS]] [1:2] : (tensor<3xi64>) -> tensor<1xi64>
# CHECK: stablehlo.slice %[[COUNTS]] [2:3] : (tensor<3xi64>) -> tensor<1xi64>
# CHECK-NEXT: %[[LAST:.*]] = stablehlo.reshape
# CHECK-NEXT: %[[TOTAL:.*]] = stablehlo.add %{{.*}}, %[[LAST]] : tensor<i64>
# CHECK: stablehlo.add %[[TOTAL]], %{{.*}} : tensor<i64>
# CHECK: stablehlo.dynamic_broadcast_in_dim
# CHECK: "stablehlo.scatter"
# CHECK: stablehlo.while
# CHECK: %[[END:.*]] = stablehlo.reshape %[[TOTAL]] : (tensor<i64>) -> tensor<1xi64>
# CHECK: stablehlo.real_dynamic_slice %{{.*}}, %{{.*}}, %[[END]], %{{.*}}
# CHECK: "stablehlo.gather"(%arg0, {{.*}} : (tensor<3x2xf64>, tensor<?x1xi64>) -> tensor<?x2xf64>
counts = pt.lvector("counts")
print_ir("repeat_run_time", [r, counts], [pt.repeat(r, counts, axis=0)])

# Unique: a stable sort with positions, run starts, their prefix sum (a while of shifted
# gathers), a scatter by run number, and a slice to the run count, which the runtime
# measures (it is computed by the program).
u = pt.lvector("u")
# CHECK-LABEL: TEST: unique raw
# CHECK: "stablehlo.sort"
# CHECK: stablehlo.while
# CHECK: "stablehlo.scatter"
# CHECK: stablehlo.real_dynamic_slice
print_ir("unique", [u], [pt.unique(u)], raw=True)

# Unique along an axis: unique rows of the input with the axis moved first and the other
# dims flattened. The rows are sorted by one column at a time, last column first (a while
# of gathers rows[order, j] and stable sorts); a run starts where any element of a row
# differs from the row before; the unique rows are gathered and the axis moved back.
t = pt.tensor3("t")
# CHECK-LABEL: TEST: unique_axis opt
# CHECK: stablehlo.transpose %arg0, dims = [2, 0, 1]
# CHECK: stablehlo.while
# CHECK: "stablehlo.dynamic_gather"({{.*}}collapsed_slice_dims = [0, 1], start_index_map = [0, 1]
# CHECK: "stablehlo.sort"
# CHECK: stablehlo.compare  NE, {{.*}} -> tensor<?x?xi1>
# CHECK-NEXT: stablehlo.reduce({{.*}}) applies stablehlo.or across dimensions = [1]
# CHECK: "stablehlo.scatter"
# CHECK: stablehlo.transpose {{.*}}, dims = [1, 2, 0]
print_ir("unique_axis", [t], [pt.unique(t, axis=2)])
