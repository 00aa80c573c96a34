"""CheckAndRaise (Assert, PyMC's CheckParameterValue) as real run-time checks."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.raise_op import Assert, CheckAndRaise

from tests.helpers import PY_MODE, RAW_MODE, compare_with_py
from tests.values import ALL_DTYPES


class CustomError(ValueError):
    pass


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_passing_checks_return_the_value(dtype):
    x = pt.vector("x", dtype=dtype)
    out = Assert("x is not empty")(x, pt.gt(x.shape[0], 0))
    compare_with_py([x], [out], [np.arange(3).astype(dtype)])


@pytest.mark.parametrize("mode", ["STABLEHLO", RAW_MODE])
def test_failing_condition_raises_the_ops_exception(mode):
    x = pt.vector("x")
    checked = CheckAndRaise(CustomError, "x must be positive")(x, pt.all(x > 0), x.sum() < 100)
    fn = pytensor.function([x], checked * 2, mode=mode)
    np.testing.assert_allclose(fn(np.array([1.0, 2.0])), [2.0, 4.0])
    with pytest.raises(CustomError, match="x must be positive"):
        fn(np.array([1.0, -2.0]))  # first condition fails
    with pytest.raises(CustomError, match="x must be positive"):
        fn(np.array([99.0, 2.0]))  # second condition fails
    with pytest.raises(CustomError):  # the Python mode agrees
        pytensor.function([x], checked, mode=PY_MODE)(np.array([1.0, -2.0]))


def test_integer_conditions_use_numpy_truthiness():
    x = pt.lscalar("x")
    out = Assert("x is zero")(x, x)  # make_node casts the int condition to bool
    fn = pytensor.function([x], out, mode=RAW_MODE)
    assert fn(5) == 5
    with pytest.raises(AssertionError, match="x is zero"):
        fn(0)


def test_pymc_parameter_check():
    import pymc as pm
    from pymc.logprob.utils import ParameterValueError

    sigma = pt.scalar("sigma")
    x = pt.vector("x")
    logp = pm.logp(pm.Normal.dist(0.0, sigma), x).sum()
    fn = pytensor.function([x, sigma], logp, mode="STABLEHLO")
    expected = pytensor.function([x, sigma], logp, mode=PY_MODE)
    np.testing.assert_allclose(fn(np.ones(3), 2.0), expected(np.ones(3), 2.0), rtol=1e-12)
    with pytest.raises(ParameterValueError, match="sigma > 0"):
        fn(np.ones(3), -1.0)


def test_checks_are_dropped_only_on_request():
    x = pt.scalar("x")
    out = Assert("x positive")(x, x > 0)
    unsafe = pytensor.compile.mode.get_mode("STABLEHLO").including("local_remove_all_assert")
    assert pytensor.function([x], out, mode=unsafe)(-1.0) == -1.0
    with pytest.raises(AssertionError):
        pytensor.function([x], out, mode="STABLEHLO")(-1.0)
