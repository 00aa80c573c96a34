# The IR dump tool on this file: its `graph` function is the default entry.
# RUN: %PYTHON %tools/pytensor-stablehlo-opt %s --emit=raw --no-rewrite | FileCheck %s --check-prefix=RAW
# RUN: %PYTHON %tools/pytensor-stablehlo-opt %s | FileCheck %s --check-prefix=OPT
# RUN: %PYTHON %tools/pytensor-stablehlo-opt %s --input-shapes=4 | FileCheck %s --check-prefix=SPEC
# RUN: %PYTHON %tools/pytensor-stablehlo-opt %s --print-ir-after=canonicalize --pass-statistics --emit=none 2>&1 | FileCheck %s --check-prefix=AFTER
# RUN: %PYTHON %tools/pytensor-stablehlo-opt %s --emit=hlo --input-shapes=4 | FileCheck %s --check-prefix=HLO
# RUN: %PYTHON %tools/pytensor-stablehlo-opt %s --debug-info | FileCheck %s --check-prefix=LOC
# RUN: %PYTHON %tools/pytensor-stablehlo-opt %s:scaled_sum --run --emit=none 2>&1 | FileCheck %s --check-prefix=EXEC
# RUN: %PYTHON %tools/pytensor-stablehlo-opt %s:draw --input-shapes=4 | FileCheck %s --check-prefix=KEY
# RUN: %PYTHON %tools/pytensor-stablehlo-opt %s:draw --run --emit=none 2>&1 | FileCheck %s --check-prefix=DRAWS
# RUN: %PYTHON %tools/pytensor-stablehlo-opt %s:cholesky --platform=cuda | FileCheck %s --check-prefix=CUDA
import numpy as np
import pytensor
import pytensor.tensor as pt


def graph():
    x = pt.vector("x")
    return [x], [pt.exp(x) * (pt.constant(1.0) + 2.0)]


def scaled_sum():
    x = pt.matrix("x")
    return [x], [(x * 2).sum(axis=0)]


def cholesky():
    x = pt.matrix("x")
    return [x], [pt.linalg.cholesky(x)]


def draw():
    rng = pytensor.shared(np.random.default_rng(0), name="rng")
    mu = pt.vector("mu")
    return [mu], [pt.random.normal(mu, 1.0, rng=rng), mu * 2]


# The rule's IR as emitted: the float32 constants are added, then converted.
# RAW: func.func public @main(%arg0: tensor<?xf64>) -> tensor<?xf64>
# RAW: stablehlo.add %{{.*}}, %{{.*}} : tensor<f32>
# RAW: stablehlo.exponential %arg0 : tensor<?xf64>
# RAW: stablehlo.convert {{.*}} : (tensor<?xf32>) -> tensor<?xf64>
# RAW: stablehlo.multiply

# After PyTensor's rewrites and the pipeline, 1 + 2 is the constant 3.
# OPT: stablehlo.constant dense<3.000000e+00>
# OPT-NOT: stablehlo.add
# OPT: stablehlo.exponential %arg0 : tensor<?xf64>
# OPT: stablehlo.multiply

# Specialized to a 4-vector: every type is static, no dynamic broadcast is left.
# SPEC: func.func public @main(%arg0: tensor<4xf64>) -> tensor<4xf64>
# SPEC-NOT: dynamic
# SPEC: stablehlo.broadcast_in_dim
# SPEC: return {{.*}} : tensor<4xf64>

# IR after one pass goes to stderr, mlir-opt style; the statistics table follows.
# AFTER: // -----// IR Dump After canonicalize //----- //
# AFTER: mhlo.exponential
# AFTER: // pass statistics
# AFTER: canonicalize

# XLA's optimized HLO keeps the PyTensor node names as op metadata.
# HLO: HloModule main
# HLO: exponential({{.*}}), metadata={op_name="Exp(x)"}
# HLO: ENTRY

# LOC: stablehlo.exponential %arg0 : tensor<?xf64> loc([[EXP:#loc[0-9]+]])
# LOC: [[EXP]] = loc("Exp(x)")

# EXEC: // run: inputs x: (3, 3)
# EXEC: output 0: float64[3] max abs err {{.*}} ok

# The shared Generator the entry leaves out follows its inputs, as a Threefry key.
# KEY: func.func public @main(%arg0: tensor<4xf64>, %arg1: tensor<2xui32>) -> (tensor<4xf64>, tensor<4xf64>

# Draws are not numpy's numbers: checked by shape and dtype; the rest by value.
# DRAWS: // run: inputs mu: (3,), rng: Generator
# DRAWS: output 0: float64[3] random draws: shape and dtype checked ok
# DRAWS: output 1: float64[3] max abs err 0, max rel err 0 ok

# --platform=cuda: cuSOLVER's potrf where the CPU module calls LAPACK's.
# CUDA-NOT: lapack
# CUDA: stablehlo.custom_call @cusolver_potrf_ffi
