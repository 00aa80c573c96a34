"""Module -> XLA executable, with a bounded in-memory cache and an opt-in disk cache."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import io
import math
import os
import platform
import sys
import threading
from collections import OrderedDict
from pathlib import Path

import jax
import jax.extend.backend as xb
import numpy as np
from jax.extend.mlir import ir

from lowering._jax_internal import DeviceList, enable_x64, load_lapack, make_ir_context
from lowering._jax_internal import xla_client as _xc
from lowering.errors import ForkedProcessError
from lowering.regions import written_for_the_executor


def module_bytecode(module: ir.Module) -> bytes:
    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    return buf.getvalue()


def order_leading_constants(module: ir.Module) -> None:
    """Each function's leading constants in an order of their own (type, then value),
    so that one graph gives one module, byte for byte, in every process.

    MLIR's folding hoists the constants of a loop body to the top of its function in
    an order that can change from process to process (a censored Gamma model's two
    hoisted splats swapped places in one run of four): the same graph then missed the
    executable caches, the on-disk one included, keyed by the module's bytes. Constants
    have no operands, so any order of a leading run of them is the same program."""
    for function in module.body.operations:
        if not function.regions or not function.regions[0].blocks:
            continue
        block = function.regions[0].blocks[0]
        leading, after = [], None
        for op in block.operations:
            if op.operation.name != "stablehlo.constant":
                after = op.operation
                break
            leading.append(op.operation)
        if after is None or len(leading) < 2:
            continue
        for op in sorted(leading, key=_constant_key):
            op.move_before(after)


def _constant_key(op) -> tuple[str, str]:
    kind = str(op.result.type)
    try:
        value = ir.DenseElementsAttr(op.attributes["value"])
    except (TypeError, ValueError):  # (element types the bindings do not read, as complex)
        # (printed without verifying it, which costs 9 ms an op in a long function)
        return kind, op.get_asm(use_local_scope=True, assume_verified=True).partition("=")[2]
    if value.is_splat:
        return kind, str(value)  # (one element)
    return kind, hashlib.sha256(np.asarray(value).tobytes()).hexdigest()


class ExecutableCache:
    """LRU of compiled executables keyed by (platform, module fingerprint)."""

    def __init__(self, max_entries: int = 256):
        self.max_entries = max_entries
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key):
        with self._lock:
            exe = self._entries.get(key)
            if exe is not None:
                self._entries.move_to_end(key)
                self.hits += 1
            else:
                self.misses += 1
            return exe

    def put(self, key, exe) -> None:
        with self._lock:
            self._entries[key] = exe
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


EXECUTABLES = ExecutableCache()
# Serialized executables survive the process here when set (opt-in): a second process
# that compiles the same module on the same machine and jaxlib loads it instead.
DISK_CACHE_ENV = "STABLEHLO_PYTENSOR_CACHE_DIR"


def get_backend(platform: str = "cpu", large: bool = False):
    """The XLA client for `platform`; on CPU our own, which runs executables in the
    calling thread (`_synchronous_cpu_client`), with the threads `cpu_threads(large)`
    gives."""
    if platform == "cpu":
        if _forked_after_xla:
            raise ForkedProcessError()
        return _synchronous_cpu_client(cpu_threads(large))
    try:
        return xb.get_backend(platform)
    except RuntimeError as exc:  # jax: "Unknown backend cuda. Available backends are [...]"
        raise RuntimeError(
            f"no XLA backend for platform {platform!r} here ({exc}); on an NVIDIA GPU, "
            "install jax's CUDA plugin (e.g. pip install 'jax[cuda13]')"
        ) from None


# A process forked after our CPU client started cannot run XLA: a compile, or a kernel XLA
# splits over its thread pool, waits forever for threads that stayed in the parent (beta
# regression's logp under pm.sample(cores=2) on Linux, whose default start method is
# fork), and a new client aborts on the locks the fork copied. So a forked child raises
# ForkedProcessError where it would compile or run, and the callbacks registered with
# `on_fork_after_xla` disarm what was built before the fork (runtime.Compiled).
_forked_after_xla = False
_fork_callbacks: list = []


def on_fork_after_xla(callback) -> None:
    """Call `callback()` in a child forked after the parent started the CPU client."""
    _fork_callbacks.append(callback)


def _after_fork_in_child() -> None:
    global _forked_after_xla
    if _synchronous_cpu_client.cache_info().currsize:
        _forked_after_xla = True
        for callback in _fork_callbacks:
            callback()
        for keeper in _POOL_KEEPERS.values():  # its thread ids are the parent's threads
            keeper.stop()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


@functools.cache
def _synchronous_cpu_client(threads: int | None = 1):
    """A one-device CPU client that runs each executable in the thread that calls it.

    jax's own CPU client dispatches asynchronously: execution moves to another thread
    and the caller waits for it when it reads the results, which costs more than many
    whole models (linear regression logp+dlogp: 80-110 µs a call against 27-54 µs run
    in the caller's thread). We read every result at once, so nothing overlaps anyway.
    Its pool has `threads` threads (None: one per core, XLA's default); XLA reads
    PJRT_NPROC as the client starts, so that is set for that moment only.
    """
    saved = os.environ.get("PJRT_NPROC")
    if threads is not None:
        os.environ["PJRT_NPROC"] = str(threads)
    keep = threads == 1 and _sched_getcpu is not None  # (`PoolBesideCaller`)
    before = _pool_thread_ids() if keep else set()
    try:
        client = _xc.make_cpu_client(asynchronous=False, num_devices=1)
    finally:
        if saved is None:
            os.environ.pop("PJRT_NPROC", None)
        else:
            os.environ["PJRT_NPROC"] = saved
    if keep:
        _POOL_KEEPERS[threads] = PoolBesideCaller(_pool_thread_ids() - before)
    return client


# XLA's executor runs a module's kernels in the calling thread, but whenever more than 8 are
# ready at once it hands half of them to its client's pool (a fixed threshold; no option
# reaches it), which is one thread on the one-thread client. Where the OS runs that thread on
# another core, every such module's calls slow down, and stay slow, from then on: ARMA's
# logp+dlogp 48 -> 101-117 µs after some hundreds of calls, GARCH's 56 -> 101-146, LKJ's
# 37 -> 57-80 (benchmarks/README.md, "Two levels of per-call time"). Kept on the caller's
# core, the pool thread runs only while the caller waits, as on one core (ARMA 47-49 µs
# through 16,000 calls). So on Linux the runtime moves it to the caller's core, and again
# after the caller moves (`PoolBesideCaller`). The clients with a thread per core are for
# work worth spreading, and are left alone.
_POOL_THREAD_NAME = "tf_XLAEigen"  # how XLA names its CPU client's pool threads (Linux comm)


def _load_sched_getcpu():
    if not hasattr(os, "sched_setaffinity") or not os.path.isdir("/proc/self/task"):
        return None
    try:
        import ctypes

        return ctypes.PyDLL(None).sched_getcpu  # (keeps the GIL: 60 ns a call, not 100)
    except (OSError, AttributeError):
        return None


_sched_getcpu = _load_sched_getcpu()


def _pool_thread_ids() -> set[int]:
    """This process's XLA pool threads (Linux), by thread id."""
    ids = set()
    for tid in os.listdir("/proc/self/task") if _sched_getcpu is not None else ():
        try:
            with open(f"/proc/self/task/{tid}/comm") as comm:
                if comm.read().strip() == _POOL_THREAD_NAME:
                    ids.add(int(tid))
        except OSError:  # the thread ended meanwhile
            pass
    return ids


class PoolBesideCaller:
    """Keeps a CPU client's pool threads on the core of the thread that calls it,
    looking where that thread runs at every CHECK_EVERY-th call: callers seldom move, and
    looking at every call cost 0.65-1.2 µs a call, against about 0.3."""

    CHECK_EVERY = 16
    __slots__ = ("threads", "cpu", "_countdown")

    def __init__(self, threads):
        self.threads = tuple(sorted(threads))
        self.cpu = None  # (not -1: sched_getcpu's failure)
        self._countdown = 0

    def __call__(self) -> None:
        self._countdown -= 1
        if self._countdown > 0:
            return
        self._countdown = self.CHECK_EVERY
        cpu = _sched_getcpu()
        if cpu != self.cpu and self.threads:
            self._move(cpu)

    def _move(self, cpu: int) -> None:
        """Put the threads on `cpu`; where that fails (sched_getcpu's -1 where the kernel
        cannot tell, a thread gone, one not ours to move), stop: a call never fails for
        this, and the threads stay where they are."""
        try:
            for tid in self.threads:
                os.sched_setaffinity(tid, (cpu,))
        except (OSError, ValueError):  # ValueError: a negative cpu
            self.stop()
        self.cpu = cpu

    def stop(self) -> None:
        self.threads = ()


_POOL_KEEPERS: dict[int, PoolBesideCaller] = {}


def pool_beside_caller(platform: str = "cpu", large: bool = False) -> PoolBesideCaller | None:
    """What a function on `get_backend(platform, large)` calls before each run to keep that
    client's pool thread on its core; None where nothing is kept (`PoolBesideCaller`)."""
    if platform != "cpu":
        return None
    get_backend(platform, large)
    keeper = _POOL_KEEPERS.get(cpu_threads(large))
    return keeper if keeper is not None and keeper.threads else None


# XLA's CPU client runs a module's independent kernels at once on a pool of threads, one
# per core, and splits a costly elementwise kernel into parts across them. For the models
# a sampler calls, whose kernels take microseconds, handing work to another thread costs
# more than it saves (a beta regression's logp+dlogp, 1,000 points and about 30 kernels:
# 105-115 µs a call on one thread, 147-190 with a thread per core, on 2 cores), and PyMC
# samples each chain in a process of its own. Large arrays are where threads pay (a
# logistic regression with 40 MB of inputs: 28 against 43 ms). So a function whose first
# call's arguments, constants and results (of the shapes its first compile gives them)
# hold at least LARGE_CALL_BYTES runs on a client with a thread per core, any other on one
# with one thread; with STABLEHLO_PYTENSOR_THREADS set, every function gets that many
# ("all": one per core). Random draws are work enough from LARGE_DRAW_BYTES of results
# (Threefry and a sampler per element; on 2 cores, 16,384 normals 312 against 256 µs,
# gammas 2.3 against 1.9 ms, Poissons 3.4 against 2.7 ms; at 8,192 about even).
THREADS_ENV = "STABLEHLO_PYTENSOR_THREADS"
LARGE_CALL_BYTES = 4 << 20
LARGE_DRAW_BYTES = 128 << 10


@functools.cache
def _thread_setting() -> int | None | str:
    """STABLEHLO_PYTENSOR_THREADS: a positive count, None for "all", "auto" when unset.
    Read once."""
    value = os.environ.get(THREADS_ENV, "").strip()
    if not value:
        return "auto"
    if value.lower() == "all":
        return None
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{THREADS_ENV}={value!r}: expected a positive number of threads, or 'all'")
    return int(value)


def cpu_threads(large: bool = False) -> int | None:
    """The CPU client's threads for a function with (`large`) or without
    LARGE_CALL_BYTES of data: the setting's count, or, unset, one or (None) one per core."""
    setting = _thread_setting()
    if setting == "auto":
        return None if large else 1
    return setting


# With one thread, XLA's executor still hands kernels to its pool thread when more than
# 8 are ready at once; scheduled to save memory, fewer are (beta regression on one
# thread: 104 µs a call, against 164-211 with the default schedule). An XLA that refuses
# the option drops it (`compile_bytecode`).
_ONE_THREAD_OVERRIDES = {"cpu": (("xla_cpu_scheduler_type", "CPU_SCHEDULER_TYPE_MEMORY_OPTIMIZED"),)}


def thread_overrides(platform: str = "cpu", threads: int | None = 1) -> tuple[tuple[str, str], ...]:
    """The compile options for a CPU client of `threads` threads: the memory-saving
    schedule where it has one."""
    if platform != "cpu" or threads != 1:
        return ()
    return _ONE_THREAD_OVERRIDES.get(platform, ())


def compile_module(
    module: ir.Module, platform: str = "cpu", fp_contraction: bool = True, host_callbacks=(),
    lock=None, large: bool = False,
):
    """Compile (or fetch) the executable for a static-shaped module, with XLA:CPU's
    elemental emitter where that compiles faster and runs as fast (`suits_elemental_emitter`),
    and its small-loop threshold where the module's loops allow (`takes_small_loops`; where
    they do not, what assumed them is rewritten: `regions.written_for_the_executor`).
    `lock` guards the module's context while the module is read, not while XLA compiles.
    `large`: for the CPU client of a function with large data (`cpu_threads`)."""
    with lock or contextlib.nullcontext():
        small_loops = takes_small_loops(module.operation, platform, fp_contraction)
        if not small_loops:  # (each step of such a loop would go through XLA's executor)
            written_for_the_executor(module.operation)
        order_leading_constants(module)
        bytecode = module_bytecode(module)
        elemental = platform == "cpu" and suits_elemental_emitter(module)
    return compile_bytecode(bytecode, platform, fp_contraction, host_callbacks, elemental=elemental, large=large,
                            small_loops=small_loops)


def takes_small_loops(module_op: ir.Operation, platform: str = "cpu", fp_contraction: bool = True) -> bool:
    """Whether `compile_module` compiles the module with XLA:CPU's small-loop threshold
    (SMALL_LOOP_BYTES): on the CPU, where the multiply-adds may contract, and where every
    loop fits the elemental emitter's stack (the small-loop functions' kernels come from
    that emitter; a module that suits it has no loop that does not)."""
    return platform == "cpu" and fp_contraction and _loops_fit_elemental_stack(module_op)


# XLA:CPU compiles a module with its elemental emitter in about 0.6x the time its MLIR
# fusion emitters take. Where no tensor has more than this many elements and the module
# has no scatter, its code runs as fast (benchmarks/README.md, "XLA's code generators";
# modules the tests compile, elemental / fusion per run):
# - 2,023 without loops: a median 0.99x, 95% of them within 1.03x, the slowest 1.13x;
# - 282 with loops (Scan, special functions' series, samplers): a median 1.00x, 5th-95th
#   percentile 0.94-1.05x; the 5 slowest, measured again with 4x the rounds, 0.97-1.01x.
# The fusion emitters' code ran 3-4x faster on scatters, and from 512 elements up faster
# by up to 1.11x without loops and up to 1.64x with them.
SMALL_TENSOR_ELEMENTS = 256
_FUSION_EMITTER_OPS = ("stablehlo.scatter",)
# The elemental emitter recurses once per op of a fused chain while it compiles, on a
# thread of XLA's own: a chain of 10,000 elementwise ops (9,000 fine) overflowed that
# stack and killed the process. The fusion emitters compile 20,000 and more.
ELEMENTAL_MAX_OPS = 4_000


def suits_elemental_emitter(module: ir.Module) -> bool:
    """Whether every tensor of `module` (results and block arguments, loop states
    included, constants aside; static shapes) has at most SMALL_TENSOR_ELEMENTS elements,
    it has no scatter, and at most ELEMENTAL_MAX_OPS ops."""
    return _fits_elemental_stack(module) and _small_tensors_only(module)


def _fits_elemental_stack(op: ir.Module | ir.Operation) -> bool:
    """Whether `op` (a module, a loop) holds at most ELEMENTAL_MAX_OPS ops (counted up to
    one more)."""
    ops = 0

    def visit(_):
        nonlocal ops
        ops += 1
        return ir.WalkResult.INTERRUPT if ops > ELEMENTAL_MAX_OPS else ir.WalkResult.ADVANCE

    (op.operation if isinstance(op, ir.Module) else op).walk(visit)
    return ops <= ELEMENTAL_MAX_OPS


def _loops_fit_elemental_stack(module_op: ir.Operation) -> bool:
    """Whether every while loop of the module, the loops nested in it included, holds at
    most ELEMENTAL_MAX_OPS ops. In a module the elemental emitter does not suit, the
    small loops' functions are all it compiles (SMALL_LOOP_BYTES): the code around them
    may be any length."""
    fits = True

    def visit(op):
        nonlocal fits
        if op.name != "stablehlo.while":
            return ir.WalkResult.ADVANCE
        fits = _fits_elemental_stack(op)
        return ir.WalkResult.SKIP if fits else ir.WalkResult.INTERRUPT

    module_op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return fits


def _small_tensors_only(module: ir.Module) -> bool:
    """No tensor over SMALL_TENSOR_ELEMENTS elements (or of a dynamic shape), no scatter.
    A constant does not count (a table of coefficients: what reads it counts)."""
    suits = True

    def visit(op):
        nonlocal suits
        types = [] if op.name == "stablehlo.constant" else [r.type for r in op.results]
        for region in op.regions:
            for block in region.blocks:
                types += [a.type for a in block.arguments]
        if op.name in _FUSION_EMITTER_OPS or any(
            isinstance(t, ir.RankedTensorType)
            and (not t.has_static_shape or math.prod(t.shape) > SMALL_TENSOR_ELEMENTS)
            for t in types
        ):
            suits = False
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return suits


# XLA:CPU runs a while loop through its executor: every iteration runs the body's kernels
# one by one, a microsecond or so each (the incomplete gamma function's series over 1,000
# points: 6 kernels and 4 copies an iteration, and 2 kernels for its condition). A loop
# whose one iteration reads and writes fewer bytes than its "small while loop" threshold
# (1 KiB by default) it compiles instead into one function that runs the whole loop
# (SmallWhileLoopHoistingPass; loops holding custom calls, sorts or scatters stay as they
# are). That function's kernels come from the elemental emitter, so a module gets the
# threshold only where each of its loops fits the elemental emitter's stack
# (ELEMENTAL_MAX_OPS, `_loops_fit_elemental_stack`), and not under STABLEHLO_NO_FMA,
# whose options are checked not to contract. The censored Gamma model (12 loops over 1,000
# points, 64 KiB to 1 MiB an iteration) went from 550 to 503 µs a call; from 10,000 points
# on, where iterations are larger than this, kernels are long and it made no difference
# either way (benchmarks/README.md, "Special functions in PyMC models").
SMALL_LOOP_BYTES = 2 << 20
_SMALL_LOOP_OPTION = "xla_cpu_small_while_loop_byte_threshold"


def _with_backend_extra_option(options, key: str, value: str):
    """jaxlib's CompileOptions `options` with DebugOptions.xla_backend_extra_options[key]
    = value. The bindings do not show that map and env_option_overrides set scalar
    fields only, so the entry goes in through the serialized options: a message holding
    only CompileOptionsProto.executable_build_options (field 3) -> debug_options (3) ->
    xla_backend_extra_options (500), appended, which protobuf's parser merges into the
    message before it."""

    def field(number: int, payload: bytes) -> bytes:  # a length-delimited field
        return _varint(number << 3 | 2) + _varint(len(payload)) + payload

    entry = field(1, key.encode()) + field(2, value.encode())
    return type(options).ParseFromString(options.SerializeAsString() + field(3, field(3, field(500, entry))))


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append(n & 0x7F | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


@functools.cache
def _c_float_environment():
    """glibc's fegetenv and fesetenv (None off Linux: FE_DFL_ENV is glibc's and musl's
    (fenv_t *) -1, elsewhere a symbol of its own)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        c = ctypes.PyDLL(None)  # the interpreter's own symbols, libm's among them; calls keep the GIL
        return c.fegetenv, c.fesetenv
    except (OSError, AttributeError):
        return None


def in_default_float_environment(fn):
    """`fn`, run in C's default floating-point environment, the one numpy computes in.

    XLA:CPU sets the thread's flush-to-zero and denormals-are-zero bits while an
    executable runs (README: subnormals are flushed), and a host callback runs on that
    thread: LAPACK under perform would read a subnormal input as 0 and flush what it
    computes, parting from perform's results. The environment XLA set is restored after."""
    functions = _c_float_environment()
    if functions is None:
        return fn
    fegetenv, fesetenv = functions
    default = ctypes.c_void_p(-1)  # FE_DFL_ENV

    def run(*arrays):
        saved = ctypes.create_string_buffer(64)  # fenv_t: 32 bytes on x86-64, 8 on arm64
        fegetenv(saved)
        fesetenv(default)
        try:
            return fn(*arrays)
        finally:
            fesetenv(saved)

    return run


def compile_bytecode(
    bytecode: bytes, platform: str = "cpu", fp_contraction: bool = True, host_callbacks=(),
    elemental: bool = False, large: bool = False, small_loops: bool = False,
):
    """Compile (or fetch) the executable for a serialized StableHLO module.

    `fp_contraction=False`: every multiply and every add rounds on its own, as in numpy,
    where XLA would fuse them into FMAs (`no_contraction_overrides`).
    `host_callbacks`: the Python functions the module's host calls name by index
    (`LoweringContext.host_call`). The executable holds them, so it is cached with them
    in memory and never on disk (a stored one could not call them).
    `elemental`: the module suits XLA:CPU's elemental emitter, which compiles it faster
    (`suits_elemental_emitter`, `elemental_overrides`).
    `large`: for the CPU client of a function with large data (`cpu_threads`).
    `small_loops`: XLA:CPU may compile a loop over little data as one function
    (SMALL_LOOP_BYTES; ignored where the multiply-adds must not contract).
    """
    backend = get_backend(platform, large)
    if not fp_contraction:
        overrides = no_contraction_overrides(platform)
    elif elemental:
        overrides = elemental_overrides(platform)
    else:
        overrides = ()
    threads = cpu_threads(large) if platform == "cpu" else None
    overrides += thread_overrides(platform, threads) + vector_overrides(platform) + reduction_overrides(platform)
    variant = "".join(f"-{name}={value}" for name, value in overrides)
    if platform == "cpu":  # XLA splits kernels for its client's threads
        variant += f"-threads={threads or 'all'}"
    small_loops = small_loops and platform == "cpu" and fp_contraction
    if small_loops:
        variant += f"-{_SMALL_LOOP_OPTION}={SMALL_LOOP_BYTES}"
    host_callbacks = tuple(host_callbacks)
    key = (platform, hashlib.sha256(bytecode).hexdigest() + variant)
    if host_callbacks:
        key += host_callbacks
    exe = EXECUTABLES.get(key)
    if exe is not None:
        return exe
    if platform == "cpu" and b"lapack_" in bytecode:
        load_lapack()
    devices = DeviceList(tuple(backend.local_devices()[:1]))
    options = xb.get_compile_options(num_replicas=1, num_partitions=1)
    if small_loops:
        options = _with_backend_extra_option(options, _SMALL_LOOP_OPTION, str(SMALL_LOOP_BYTES))
    options.env_option_overrides = list(overrides)
    try:
        if host_callbacks:
            # Only the module-object overload of compile_and_load takes callbacks.
            with make_ir_context():
                module = ir.Module.parse(bytecode)
                exe = backend.compile_and_load(
                    module, executable_devices=devices, compile_options=options,
                    host_callbacks=[in_default_float_environment(fn) for fn in host_callbacks],
                )
        else:
            exe = _load_from_disk(backend, key, devices, options)
            if exe is None:
                exe = backend.compile_and_load(bytecode, devices, options)
                _store_on_disk(backend, key, exe)
    except Exception as exc:  # jaxlib's XlaRuntimeError: INVALID_ARGUMENT
        # An optional choice this XLA does not know (jaxlib 0.11 has one code generator):
        # dropped for the process.
        table = _refused_choice(platform, str(exc))
        if table is None:
            raise
        table.pop(platform, None)
        return compile_bytecode(bytecode, platform, fp_contraction, host_callbacks, elemental=elemental, large=large,
                                small_loops=small_loops)
    EXECUTABLES.put(key, exe)
    return exe


@functools.cache
def no_contraction_overrides(platform: str = "cpu") -> tuple[tuple[str, str], ...]:
    """The compile options under which XLA contracts no multiply-add into an FMA.

    XLA:CPU lets LLVM fuse `a * b + c` into one FMA, rounded once, wherever the host has
    FMA instructions; it also recomputes a cheap value inside each fusion that reads it,
    so one variable can get two roundings and a comparison on it two answers (README,
    "Multiply-adds and FMA"). The instruction set is fixed per process
    (`XLA_FLAGS=--xla_cpu_max_isa`, read when the first XLA client starts); per
    executable, only LLVM's optimization level 0 stops the contraction, and only in the
    code it compiles: XLA's MLIR fusion emitters, which it uses for some fusions on some
    hosts (float64 vectors of 5 or more on an AVX2 EPYC), contract whatever the level, so
    they are turned off too. So: nothing where this process's XLA does not contract (a
    probe decides), both options where it does.
    """
    if platform != "cpu":
        raise NotImplementedError(
            f"fp_contraction=False is implemented for the CPU only, not for {platform!r}"
        )
    if not _contracts(platform):
        return ()
    # An XLA that no longer knows an option refuses the compile (jaxlib 0.11.2 has no
    # xla_cpu_use_fusion_emitters): keep the ones this one takes, then check they do.
    overrides = tuple(option for option in _NO_CONTRACTION if _takes_option(platform, option))
    if _contracts(platform, overrides):
        raise NotImplementedError(
            "this XLA contracts multiply-adds into FMAs even with "
            f"{', '.join(f'{k}={v}' for k, v in overrides) or 'no option it takes'}: "
            "fp_contraction=False cannot round as numpy does here"
        )
    return overrides


_NO_CONTRACTION = (("xla_backend_optimization_level", "0"), ("xla_cpu_use_fusion_emitters", "False"))


# The compile options of a module that suits the elemental emitter: it rather than XLA:CPU's
# MLIR fusion emitters. Both contract multiply-adds into FMAs. Their results were equal to
# the bit on every workload of benchmarks/code_generators.py, but not in 29 of the 282
# captured modules with loops (1-2 ulp in the three compared). An XLA that refuses the
# option (jaxlib 0.11) drops its entry (`compile_bytecode`).
_ELEMENTAL_OVERRIDES = {"cpu": (("xla_cpu_use_fusion_emitters", "False"),)}


def elemental_overrides(platform: str = "cpu") -> tuple[tuple[str, str], ...]:
    return _ELEMENTAL_OVERRIDES.get(platform, ())


# XLA:CPU has LLVM prefer 256-bit vectors, and LLVM then vectorizes a kernel that mixes
# 32- and 64-bit lanes (a cipher's words and the float64 draws made of them) four lanes
# at a time. Preferring 512 bits, on a host with AVX-512, it takes eight or sixteen: 10^6
# float64 uniforms took 0.70 ms a call against 1.30-1.32, a logistic GLM's logp and
# gradient 54-55 µs against 68-70, a censored gamma model's 147-148 against 201-215
# (alternating processes; benchmarks/README.md, "512-bit vectors"). On a host without
# AVX-512 it changes nothing. In jaxlib 0.10.2 it breaks XLA's atan, which
# `builders.polynomial_atan` replaces; the test suite, and about 50 elementwise functions
# of JAX compared bit for bit at both widths, found nothing else (JAX's float32 i0e and
# i1e moved by up to 2 ulps). An XLA that refuses the option drops it.
_VECTOR_OVERRIDES = {"cpu": (("xla_cpu_prefer_vector_width", "512"),)}


def vector_overrides(platform: str = "cpu") -> tuple[tuple[str, str], ...]:
    return _VECTOR_OVERRIDES.get(platform, ())


# XLA:CPU's tree_reduction_rewriter turns a reduce over more than 32 elements into a
# reduce_window of 32 and a reduce of its results, again while they are longer than 32: a
# sum of 2,000 elements became three kernels and its elementwise producer a fourth, where
# without the pass it is one. (XLA rewrote a sum of 4,000 elements so, not one of 8,000.)
# The extra kernels are ready together: in ARMA's and GARCH's logp and gradient more than
# 8 of them, so XLA's executor handed half to its pool thread (README, "How it works") and
# the caller waited for it, a context switch on every call, 15-40 µs of a 27-35 µs call in
# this VM's slow phases (benchmarks/README.md, "Reductions as XLA rewrote them"). Without
# the pass XLA emits each sum as one reduce with vector accumulators, as close to
# math.fsum as numpy's pairwise sums on the sizes measured (float64, 40 to 7,000 elements;
# float32 sums accumulate in float64, as PyTensor asks).
_REDUCTION_OVERRIDES = {"cpu": (("xla_disable_hlo_passes", "tree_reduction_rewriter"),)}


def reduction_overrides(platform: str = "cpu") -> tuple[tuple[str, str], ...]:
    return _REDUCTION_OVERRIDES.get(platform, ())


def _refused_choice(platform: str, message: str):
    """The table of optional compile options (`_ELEMENTAL_OVERRIDES`,
    `_ONE_THREAD_OVERRIDES`, `_VECTOR_OVERRIDES`, `_REDUCTION_OVERRIDES`) whose option
    this XLA refused with `message`, if any."""
    for table in (_ELEMENTAL_OVERRIDES, _ONE_THREAD_OVERRIDES, _VECTOR_OVERRIDES, _REDUCTION_OVERRIDES):
        if any(f"No such compile option: '{name}'" in message for name, _ in table.get(platform, ())):
            return table
    return None


# a * b + c with c = -fl(a * b): exactly 0 when the product is rounded before the add,
# the product's rounding error when both are one FMA. 64 elements of each float type:
# XLA picks its code generator by size and type.
_CONTRACTION_PROBE = """
func.func public @main(%a: tensor<64xf32>, %b: tensor<64xf32>, %c: tensor<64xf32>,
                       %x: tensor<64xf64>, %y: tensor<64xf64>, %z: tensor<64xf64>)
    -> (tensor<64xf32>, tensor<64xf64>) {
  %0 = stablehlo.multiply %a, %b : tensor<64xf32>
  %1 = stablehlo.add %0, %c : tensor<64xf32>
  %2 = stablehlo.multiply %x, %y : tensor<64xf64>
  %3 = stablehlo.add %2, %z : tensor<64xf64>
  return %1, %3 : tensor<64xf32>, tensor<64xf64>
}
"""


def _probe(platform: str, overrides=()):
    backend = get_backend(platform)
    options = xb.get_compile_options(num_replicas=1, num_partitions=1)
    options.env_option_overrides = list(overrides)
    return backend, backend.compile_and_load(_CONTRACTION_PROBE, DeviceList(tuple(backend.local_devices()[:1])), options)


def _takes_option(platform: str, option) -> bool:
    """Whether this XLA compiles with the override `option` (it refuses unknown ones)."""
    try:
        _probe(platform, (option,))
    except Exception as exc:  # jaxlib's XlaRuntimeError: INVALID_ARGUMENT
        if "No such compile option" in str(exc):
            return False
        raise
    return True


def _contracts(platform: str, overrides=()) -> bool:
    """Whether XLA, as this process runs it, compiles `a * b + c` to an FMA."""
    backend, exe = _probe(platform, overrides)
    device = backend.local_devices()[0]
    args = []
    for dtype in (np.float32, np.float64):
        a = np.arange(1, 65, dtype=dtype) * dtype(0.1)
        b = np.arange(1, 65, dtype=dtype) * dtype(0.3)
        args += [a, b, -(a * b)]
    with enable_x64():  # or jax would put the float64 arrays as float32
        buffers = [jax.device_put(v, device) for v in args]
    results = exe.execute_sharded(buffers).disassemble_into_single_device_arrays()
    return any(np.any(np.asarray(r[0]) != 0) for r in results)


def _disk_path(key) -> Path | None:
    root = os.environ.get(DISK_CACHE_ENV)
    if not root:
        return None
    # The module's hash and its options, hashed again: the options alone can pass the
    # file system's 255 bytes a name.
    name = hashlib.sha256(key[1].encode()).hexdigest()
    return Path(root) / f"{key[0]}-{name}-{_build_fingerprint()}.xla"


@functools.cache
def _build_fingerprint() -> str:
    """What an executable on disk must have been built by and for: this jaxlib, this CPU
    (XLA compiles for the host's instruction set; another CPU could not run it) and the
    XLA_FLAGS that may narrow that instruction set."""
    from jax._src.lib import version_str

    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        cpu = ""
    # XLA_FLAGS can set the instruction set (--xla_cpu_max_isa) for the whole process.
    flags = os.environ.get("XLA_FLAGS", "")
    text = "|".join([version_str, platform.machine(), platform.processor(), cpu, flags])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _load_from_disk(backend, key, devices, options):
    path = _disk_path(key)
    if path is None or not path.exists():
        return None
    try:
        return backend.deserialize_executable(path.read_bytes(), devices, options)
    except Exception:  # a stale or foreign entry: recompile and overwrite it
        return None


def _store_on_disk(backend, key, exe) -> None:
    path = _disk_path(key)
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(backend.serialize_executable(exe))
    tmp.replace(path)
