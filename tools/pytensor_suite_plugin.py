"""pytest plugin of `tools/pytensor-suite`: PyTensor's own test suites with STABLEHLO in
place of the backend they test (see that script)."""

from __future__ import annotations

import functools
import os


def pytest_configure(config):
    import numpy as np
    import pytensor
    from pytensor.compile.function import function
    from pytensor.compile.mode import get_mode

    import lowering  # noqa: F401  (registers the mode)

    mode = get_mode("STABLEHLO")
    try:
        import tests.link.jax.test_basic as jax_suite
    except ImportError:  # jax's suite skips itself without jax
        jax_suite = None
    if jax_suite is not None:
        def compare_jax_and_py(graph_inputs, graph_outputs, test_inputs, *, assert_fn=None,
                               must_be_device_array=True, jax_mode=None, py_mode=jax_suite.py_mode):
            assert_fn = assert_fn or functools.partial(np.testing.assert_allclose, rtol=1e-4)
            ours = function(graph_inputs, graph_outputs, mode=mode)
            results = ours(*test_inputs)
            expected = function(graph_inputs, graph_outputs, mode=py_mode)(*test_inputs)
            several = isinstance(graph_outputs, list | tuple)
            for got, want in zip(*((results, expected) if several else ([results], [expected])), strict=True):
                assert_fn(got, want)
                assert np.asarray(got).dtype == np.asarray(want).dtype
                assert np.shape(got) == np.shape(want)
            return ours, results

        jax_suite.compare_jax_and_py = compare_jax_and_py
    try:
        import tests.link.numba.test_basic as numba_suite
    except ImportError:
        numba_suite = None
    if numba_suite is not None:
        original = numba_suite.compare_numba_and_py

        def compare_numba_and_py(*args, numba_mode=None, eval_obj_mode=True, **kwargs):
            return original(*args, numba_mode=mode, eval_obj_mode=False, **kwargs)

        numba_suite.compare_numba_and_py = compare_numba_and_py
    if os.environ.get("STABLEHLO_SUITE_DEFAULT_MODE"):
        pytensor.config.mode = mode
