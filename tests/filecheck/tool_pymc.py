# A PyMC model through the IR dump tool: `FILE.py:make_model` gives the model, the tool
# lowers its logp and dlogp in the value variables and runs them at the initial point.
# RUN: %PYTHON %tools/pytensor-stablehlo-opt %s:make_model | FileCheck %s
# RUN: %PYTHON %tools/pytensor-stablehlo-opt %s:make_model --run --emit=none 2>&1 | FileCheck %s --check-prefix=EXEC
import numpy as np
import pymc as pm


def make_model():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=np.array([0.5, -0.2, 1.3]))
    return model


# Two value variables (sigma on the log scale), logp () and dlogp (2,), and the error flags
# of PyMC's `sigma > 0` parameter check (CheckParameterValue), raised by the runtime.
# CHECK: func.func public @main(%arg0: tensor<f64>, %arg1: tensor<f64>) -> (tensor<f64>, tensor<2xf64>, tensor<1xi1>)
# CHECK: stablehlo.exponential %arg1
# CHECK: return

# EXEC: // run: inputs mu: (), sigma_log__: ()
# EXEC: output 0 (logp): float64[] {{.*}} ok
# EXEC: output 1 (dlogp): float64[2] {{.*}} ok
