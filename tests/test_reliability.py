"""Bad input gives a clear error and loses nothing; threads and long runs stay correct.

The bad-input matrix runs every case through both ways users call us: a
`pytensor.function(mode="STABLEHLO")` (whose error types must be the Python mode's)
and `lower(fgraph).compile()` (whose messages must name the input). After each
error the same function must still give the right answer, and no argument may
have changed.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.graph.fg import FunctionGraph

from lowering import lower
from lowering.runtime import Compiled
from tests.helpers import PY_MODE, assert_same

X = pt.matrix("x")
Y = pt.vector("y", shape=(3,))
N = pt.lscalar("n")
OUTPUT = (X * Y).sum(axis=0) + pt.arange(N).sum()
GOOD = (np.ones((2, 3)), np.arange(3.0), np.int64(4))
GOOD_RESULT = np.array([6.0, 8.0, 10.0])


@pytest.fixture(scope="module")
def functions():
    """The graph as a STABLEHLO function, a Python-mode function, and a Compiled."""
    ours = pytensor.function([X, Y, N], OUTPUT, mode="STABLEHLO")
    reference = pytensor.function([X, Y, N], OUTPUT, mode=PY_MODE)
    compiled = lower(FunctionGraph([X, Y, N], [OUTPUT], clone=True)).compile()
    return ours, reference, compiled


def _readonly(a):
    a = np.array(a)
    a.flags.writeable = False
    return a


# (case, arguments, exception type from the Compiled API, text its message must contain)
BAD_ARGUMENTS = [
    ("too few", GOOD[:2], TypeError, "expected 3 arguments (x, y, n), got 2"),
    ("too many", GOOD + (1,), TypeError, "expected 3 arguments (x, y, n), got 4"),
    ("complex for float", (np.ones((2, 3), complex), *GOOD[1:]), TypeError, "input 0 (x)"),
    ("float for int", (*GOOD[:2], 3.5), TypeError, "input 2 (n)"),
    ("wrong ndim", (np.ones(3), *GOOD[1:]), TypeError, "input 0 (x): Wrong number of dimensions"),
    ("wrong static dim", (GOOD[0], np.ones(4), GOOD[2]), TypeError, "input 1 (y)"),
    ("string", ("hello", *GOOD[1:]), ValueError, "input 0 (x)"),
    ("None", (None, *GOOD[1:]), TypeError, "input 0 (x): expected an array, got None"),
    ("int beyond int64", (*GOOD[:2], 2**70), OverflowError, "input 2 (n)"),
]


@pytest.mark.parametrize("case, args, error, text", BAD_ARGUMENTS, ids=[c[0] for c in BAD_ARGUMENTS])
def test_bad_arguments_name_the_input_and_leave_the_function_working(functions, case, args, error, text):
    ours, reference, compiled = functions
    before = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    with pytest.raises(error) as info:
        compiled(*args)
    assert text in str(info.value)
    if case == "None":
        # PyTensor lets None through its filter; the Python mode then fails by accident
        # (an AxisError from the first Op), the C backend with "expected an ndarray".
        with pytest.raises(TypeError, match=r"input 0 \(x\): expected an array, got NoneType"):
            ours(*args)
    else:
        # Through pytensor.function: the Python mode's exception type, PyTensor's message.
        with pytest.raises(Exception) as expected:
            reference(*args)
        with pytest.raises(expected.type):
            ours(*args)
    for b, a in zip(before, args):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
    assert_same(compiled(*GOOD)[0], GOOD_RESULT)
    assert_same(ours(*GOOD), GOOD_RESULT)


ODD_ARRAYS = {
    "int32 for float64 (castable)": np.ones((2, 3), dtype="int32"),
    "float32 for float64": np.ones((2, 3), dtype="float32"),
    "list": [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]],
    "transposed": np.ones((3, 2)).T,
    "strided": np.ones((4, 6))[::2, ::2],
    "fortran": np.asfortranarray(np.ones((2, 3))),
    "read-only": _readonly(np.ones((2, 3))),
    "broadcast (0 strides, read-only)": np.broadcast_to(np.ones(3), (2, 3)),
    "big-endian": np.ones((2, 3), dtype=">f8"),
    "0-d numpy int for n": None,
}


@pytest.mark.parametrize("case", list(ODD_ARRAYS))
def test_odd_but_valid_arrays_work_and_are_not_mutated(functions, case):
    ours, _, compiled = functions
    x = ODD_ARRAYS[case]
    args = (GOOD[0], GOOD[1], np.array(4)) if x is None else (x, GOOD[1], GOOD[2])
    snapshot = np.array(args[0], copy=True)
    for got in (compiled(*args)[0], ours(*args)):
        assert_same(got, GOOD_RESULT)
    np.testing.assert_array_equal(np.asarray(args[0]), snapshot)


def test_outputs_never_alias_inputs():
    """Writing to a result (even one that is an input passed through) leaves the input alone."""
    x = pt.matrix("x")
    compiled = lower(FunctionGraph([x], [x, x.T, x[0]], clone=True)).compile()
    # Small results are copied, large ones are views of XLA's buffers: both are the caller's.
    for value in (np.arange(6.0).reshape(2, 3), np.arange(60000.0).reshape(2, 30000)):
        before = value.copy()
        for out in compiled(value):
            assert out.flags.writeable and not np.shares_memory(out, value)
            out[...] = -1
        np.testing.assert_array_equal(value, before)


def test_shape_errors_name_the_node_and_the_function_keeps_working():
    a, b = pt.vector("a"), pt.vector("b")
    f = pytensor.function([a, b], pt.exp(a) + b, mode="STABLEHLO")
    with pytest.raises(ValueError, match=r"shapes \(3,\), \(4,\) do not fit.*Add\("):
        f(np.ones(3), np.ones(4))
    assert_same(f(np.zeros(2), np.ones(2)), np.full(2, 2.0))


def test_dims_beyond_32_bits_are_exact_or_refused():
    """get_dimension_size is 32-bit: a dim read back from IR must not wrap silently."""
    n = pt.lscalar("n")
    # The dim comes straight from n's i64 value: exact, with nothing allocated.
    shape_only = lower(FunctionGraph([n], [pt.alloc(np.int8(0), n).shape[0]], clone=True)).compile()
    assert shape_only(2**32 + 5)[0] == 2**32 + 5
    # A dim read from an op the trace does not follow: refused, not wrapped.
    doubled = pt.concatenate([pt.alloc(np.int8(0), n)] * 2)
    compiled = lower(FunctionGraph([n], [doubled.shape[0], doubled[:1]], clone=True)).compile()
    with pytest.raises(ValueError, match=r"dimension of size 4294967296 is larger than 2\*\*31 - 1"):
        compiled(2**31)
    assert compiled(3)[0] == 6


def test_huge_shapes_fail_before_allocating(functions):
    """Shapes from values can ask for terabytes: a one-line error before XLA allocates
    (where memory is overcommitted, an allocation XLA tries can end the process)."""
    ours, _, compiled = functions
    with pytest.raises(ValueError, match=r"dimension of size 10{12} "):
        compiled(GOOD[0], GOOD[1], np.int64(10**12))
    # The value binds arange's length, and a sort needs its whole operand: XLA's reported
    # peak is bytes, its temporary buffer 8 TB. (The sum of the arange alone XLA fuses
    # into one loop with no buffer, which LLVM computes in closed form.)
    sorted_sum = pytensor.function([X, Y, N], (X * Y).sum(axis=0) + pt.sort(pt.arange(N)).sum(), mode="STABLEHLO")
    with pytest.raises(MemoryError, match=r"arguments of shapes \(2, 3\), \(3,\), \(\) need 7\.\d+e\+03 GiB at peak"):
        sorted_sum(GOOD[0], GOOD[1], np.int64(10**12))
    n = pt.lscalar("n")
    square = lower(FunctionGraph([n], [pt.zeros((n, n))], clone=True)).compile()
    with pytest.raises(MemoryError, match=r"arguments of shapes \(\) need 7\.45e\+03 GiB at peak"):
        square(10**6)
    assert_same(square(2)[0], np.zeros((2, 2)))
    assert_same(compiled(*GOOD)[0], GOOD_RESULT)
    assert_same(ours(*GOOD), GOOD_RESULT)


# --- concurrency -----------------------------------------------------------------------


def test_pytensor_function_from_eight_threads_matches_sequential_calls():
    x = pt.matrix("x")
    f = pytensor.function([x], [pt.tanh(x).sum(axis=1), x.max()], mode="STABLEHLO")
    rng = np.random.default_rng(0)
    values = [rng.normal(size=(i % 5 + 1, 3)) for i in range(200)]
    sequential = [f(v) for v in values]
    barrier = threading.Barrier(8)

    def run(chunk):
        barrier.wait()
        return [f(v) for v in chunk]

    with ThreadPoolExecutor(8) as pool:
        chunks = [values[i::8] for i in range(8)]
        threaded = dict(zip(range(8), pool.map(run, chunks)))
    for i in range(8):
        for got, want in zip(threaded[i], sequential[i::8]):
            for g, w in zip(got, want):
                assert_same(g, w)


def test_lowering_and_compiling_different_graphs_from_threads():
    """Lowering, the pass pipeline, specialization and XLA compiles run side by side."""
    barrier = threading.Barrier(8)

    def build_and_call(k):
        x, n = pt.vector("x"), pt.lscalar("n")
        out = pt.exp(x[:n]) * k + pt.arange(n, dtype="float64")
        barrier.wait()
        compiled = lower(FunctionGraph([x, n], [out], clone=True)).compile()
        return [compiled(np.arange(6.0), m)[0] for m in (2, 3, 4)]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(build_and_call, range(8)))
    for k, per_n in enumerate(results):
        for m, got in zip((2, 3, 4), per_n):
            assert_same(got, np.exp(np.arange(6.0)[:m]) * k + np.arange(m))


def test_concurrent_first_calls_compile_each_signature_once(monkeypatch):
    import lowering.runtime as runtime

    compiles = []
    real = runtime.compile_module
    monkeypatch.setattr(runtime, "compile_module", lambda *a, **kw: compiles.append(1) or real(*a, **kw))
    x = pt.vector("x")
    compiled = lower(FunctionGraph([x], [x * 2], clone=True)).compile()
    barrier = threading.Barrier(8)

    def first_call(_):
        barrier.wait()
        return compiled(np.ones(5))[0]

    with ThreadPoolExecutor(8) as pool:
        for got in pool.map(first_call, range(8)):
            assert_same(got, np.full(5, 2.0))
    assert len(compiles) == 1


# --- memory ----------------------------------------------------------------------------


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="RSS is read from /proc (Linux)")
def test_many_calls_leave_memory_flat():
    """10^5 calls of a small function: no leaked buffers, outputs or executables."""
    x = pt.vector("x")
    compiled = lower(FunctionGraph([x], [pt.exp(x) + 1, x.sum()], clone=True)).compile()
    value = np.arange(16.0)
    for _ in range(2000):  # warm-up: caches, allocator pools
        compiled(value)
    before = _rss_bytes()
    for _ in range(100_000):
        compiled(value)
    grown = _rss_bytes() - before
    # A leak of one 128-byte output per call would be 12.8 MB.
    assert grown < 8 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over 10^5 calls"


def test_executables_per_function_are_bounded_and_evictable(monkeypatch):
    monkeypatch.setattr(Compiled, "max_signatures", 4)
    x = pt.vector("x")
    compiled = lower(FunctionGraph([x], [x + 1], clone=True)).compile()
    for size in range(1, 11):
        assert_same(compiled(np.zeros(size))[0], np.ones(size))
    assert list(compiled._by_shapes) == [((size,),) for size in range(7, 11)]
    assert_same(compiled(np.zeros(1))[0], np.ones(1))  # evicted: compiles again
    compiled.clear_cache()
    assert not compiled._by_shapes
    assert_same(compiled(np.zeros(2))[0], np.ones(2))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_child_forked_after_xla_started_raises_instead_of_waiting_forever():
    """XLA's threads stay in the parent: a forked child that compiled or ran a kernel
    XLA splits over them waited forever (PyMC's beta regression under pm.sample(cores=2)
    on Linux, whose default start method is fork). Now both raise ForkedProcessError, the
    parent keeps working, and lowering (no XLA) still works in the child."""
    import math
    import time

    from lowering.errors import ForkedProcessError

    x = pt.dvector("x")
    before = pytensor.function([x], pt.gammaln(x).sum(), mode="STABLEHLO")
    assert np.isclose(before(np.full(2000, 3.5)), 2000 * math.lgamma(3.5))  # XLA runs here
    keeper = before.vm.jit_fn.compiled._keep_pool  # (Linux) keeps XLA's pool thread beside us
    pinned = {tid: os.sched_getaffinity(tid) for tid in keeper.threads} if keeper else {}
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report each outcome through the pipe, never return to pytest
        if pinned and len(os.sched_getaffinity(0)) > 1:  # elsewhere than the parent's pool thread
            others = os.sched_getaffinity(0) - next(iter(pinned.values()))
            if others:
                os.sched_setaffinity(0, {min(others)})
        for _ in range(40):  # the thread ids are the parent's: the child must not move them
            try:
                before(np.ones(3))
            except ForkedProcessError:
                pass
        outcomes = []
        for build in (lambda: before, lambda: pytensor.function([x], pt.exp(x), mode="STABLEHLO")):
            try:
                build()(np.ones(3))
                outcomes.append("ran")
            except ForkedProcessError as exc:
                outcomes.append("forkserver" in str(exc) and "ForkedProcessError")
            except BaseException as exc:  # noqa: BLE001 - anything else is a failure to report
                outcomes.append(type(exc).__name__)
        outcomes.append("lowered" if "stablehlo" in lower(FunctionGraph([x], [pt.exp(x)])).as_text() else "?")
        os.write(write, " ".join(map(str, outcomes)).encode())
        os._exit(0)
    os.close(write)
    deadline = time.monotonic() + 120
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child did not finish in 120 s")
        time.sleep(0.05)
    with os.fdopen(read) as pipe:
        assert pipe.read().split() == ["ForkedProcessError", "ForkedProcessError", "lowered"]
    assert {tid: os.sched_getaffinity(tid) for tid in pinned} == pinned
    assert np.isclose(before(np.full(2000, 3.5)), 2000 * math.lgamma(3.5))
