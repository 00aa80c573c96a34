"""Compiled: argument checks, device buffers, execution, numpy outputs.

Specialization happens here, per call signature: the first call with new shapes
refines the polymorphic module and compiles it. Later calls with those shapes and
dtypes go through jaxlib's C++ dispatch (`_jax_internal.Dispatch`), which puts the
arguments on the device and runs the executable without Python; Python only turns
the results into the outputs (`_Executable.finish`).
"""

from __future__ import annotations

import os
import threading
import weakref

import numpy as np

from jax import Array
from jax.errors import JaxRuntimeError
from jax.extend.mlir import ir
from jax.sharding import SingleDeviceSharding
from pytensor.scalar import ScalarType

from lowering._jax_internal import (
    Dispatch,
    HostBufferSemantics,
    batched_device_put,
    fastpath_data,
    finishing_tree,
    x64_on,
    x64_restore,
)
from lowering._jax_internal import to_numpy as _to_numpy
from lowering.builders import function_type
from lowering.compile import (
    LARGE_CALL_BYTES,
    LARGE_DRAW_BYTES,
    compile_module,
    get_backend,
    no_contraction_overrides,
    on_fork_after_xla,
    pool_beside_caller,
)
from lowering.errors import ForkedProcessError, PassPipelineError
from lowering.passes import executable_rewrites
from lowering.specialize import (
    PackedArguments,
    bind_runtime_dims,
    drop_folded_checks,
    has_dynamic_ops,
    inline_constants,
    is_fully_static,
    main_function,
    pack_small_arguments,
    pack_small_results,
    probe_module,
    runtime_dims,
    scalar_arguments,
    small_constants,
)
from lowering.types import dtype_of, is_rng_type, storage_dtype


class _Aval:
    """The (shape, dtype) record `batched_device_put` asks for."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype
        self.weak_type = False


class Compiled:
    """A lowered graph, callable with numpy arrays; compiles once per input signature.

    Executables are kept per call signature, at most `max_signatures` of them (the
    oldest is dropped first); `clear_cache()` drops them all. `fp_contraction=False`
    compiles them with no multiply-add fused into an FMA (`no_contraction_overrides`).
    """

    max_signatures = 64

    def __init__(self, lowered, platform: str = "cpu", fp_contraction: bool = True):
        if not fp_contraction:
            no_contraction_overrides(platform)  # refuses a platform it cannot do
        self.lowered = lowered
        self.platform = platform
        self.fp_contraction = fp_contraction
        self._bound = False  # to a client, at the first call (`_bind`)
        self._unsettled = None  # see `_settle_threads`
        self._in_types = lowered.input_types
        self._dtypes = tuple(np.dtype(storage_dtype(t)) for t in self._in_types)
        self._names = [lowered.input_names[i] for i in range(len(self._in_types))]
        self._scalar_args = scalar_arguments(self._in_types)
        # Holding a shared variable's buffer across calls, and aligning large inputs, are
        # for a client that reads host arrays where they are: XLA's CPU client. Another
        # one (a GPU's) copies each input to its device, so a held buffer would miss
        # changes made to the array in place, and an aligned copy would be a second copy.
        reads_host_memory = _reads_host_memory(get_backend(platform).local_devices()[0])
        self._resident = lowered.resident_inputs if reads_host_memory else ()
        # input -> (its array, XLA's buffer of it); the storage cells `bind_storage` gave
        self._held = dict.fromkeys(self._resident)
        self._cells: dict = {}
        self._maybe_large = tuple(
            i for i, t in enumerate(self._in_types)
            if reads_host_memory and _may_be_large(t) and i not in self._held
        )
        self._prepare = bool(self._resident or self._maybe_large)
        # Small float64 inputs passed to the executable as one vector (`_packed_call`).
        self._packing = PackedArguments.of(self._in_types, excluded=(*self._resident, *self._maybe_large))
        packed = self._packing.parts if self._packing is not None else {}
        self._unpacked = tuple(i for i in range(len(self._in_types)) if i not in packed)
        # Hoisted constants compiled into the executables; the others are passed as buffers.
        self._inlined = small_constants(len(self._in_types), lowered.hoisted_constants)
        # input -> the aligned buffer its copies reuse (`_staged`), while a call holds it
        self._staging: dict = {}
        self._staging_lock = threading.Lock()
        self._checks = tuple(lowered.runtime_checks)
        self._n_outputs = len(lowered.output_types)
        self._rng = lowered.rng or None
        self._scalar_outputs = tuple(
            i for i, t in enumerate(lowered.output_types) if isinstance(t, ScalarType)
        )
        # shapes -> executable, or -> None when the shapes need argument values too.
        self._by_shapes: dict = {}
        self._by_values: dict = {}
        self._lock = threading.Lock()
        self._dispatch = Dispatch("main", self._miss)
        _LIVE.add(self)

    # --- calling ----------------------------------------------------------------

    def __call__(self, *args):
        return self.call_checked(args)

    def call_checked(self, args):
        """Validate arguments the way `pytensor.function` does, then run."""
        if len(args) != len(self._in_types):
            raise TypeError(
                f"expected {len(self._in_types)} arguments ({', '.join(self._names)}), got {len(args)}"
            )
        return self.call_trusted([self._filter(i, a) for i, a in enumerate(args)])

    def _filter(self, i, value):
        if is_rng_type(self._in_types[i]):
            if not isinstance(value, np.random.Generator):
                raise TypeError(
                    f"input {i} ({self._names[i]}): expected a numpy Generator, got {type(value).__name__}"
                )
            return value
        if value is None:
            raise TypeError(f"input {i} ({self._names[i]}): expected an array, got None")
        try:
            return self._in_types[i].filter(value, strict=False, allow_downcast=None)
        except (TypeError, ValueError, OverflowError) as exc:
            where = f"input {i} ({self._names[i]})"
            try:
                error = type(exc)(f"{where}: {exc}")
            except Exception:  # not built from a message (JAX's errors about a tracer)
                exc.add_note(f"while converting {where}")
                raise exc from None
            raise error from None

    def call_trusted(self, args):
        """Run on arguments that already have the right dtype and rank (PyTensor's filter ran)."""
        if self._rng is None:
            results = self._run(args)
        else:
            args, generators = rng_keys(self._rng, args)
            results = self._run(args)
            for j, i in self._rng.outputs:
                if j in self._rng.constants:
                    results[j] = copy_generator(self._rng.constants[j])
                else:
                    results[j] = generators[i] if i is not None else generator_from_key(results[j])
        for j in self._scalar_outputs:  # a numpy scalar, as ScalarType's perform gives
            results[j] = results[j][()]
        return results

    def _bind(self, args) -> None:
        """Choose the client at the first call (`compile.cpu_threads`): on CPU, one with a
        thread per core where the arguments, the constants and the results of a shape
        known before the call hold LARGE_CALL_BYTES or more (LARGE_DRAW_BYTES of results
        for a function that draws), else one with a single thread; later calls keep it.
        Put the constants there. A function with results of a shape unknown before the
        call may still move to the threads at its first compile (`_settle_threads`)."""
        with self._lock:
            if self._bound:
                return
            size = sum(c.value.nbytes for c in self.lowered.hoisted_constants)
            size += sum(getattr(a, "nbytes", 0) for a in args)
            # A function of little input may write much: 10^6 normal draws, 8 MB.
            results = sum(_static_nbytes(t) for t in self.lowered.output_types)
            large = size + results >= LARGE_CALL_BYTES or (self._rng and results >= LARGE_DRAW_BYTES)
            self._unsettled = None
            if not large and any(None in getattr(t, "shape", ()) for t in self.lowered.output_types):
                self._unsettled = size
            self._use_client(self.platform == "cpu" and bool(large))
            self._bound = True

    def _use_client(self, large: bool) -> None:
        """Run on the client with a thread per core (`large`) or one thread: constants
        put there, and buffers of shared variables held for another client dropped."""
        self._large = large
        self._held = dict.fromkeys(self._held)
        self._backend = get_backend(self.platform, large)
        self._keep_pool = pool_beside_caller(self.platform, large)
        self._device = self._backend.local_devices()[0]
        self._sharding = SingleDeviceSharding(self._device)
        self._device_memory = _device_memory(self._device)
        first = len(self._in_types)
        self._constant_buffers = tuple(
            self._put(c.value, c.value.dtype)
            for j, c in enumerate(self.lowered.hoisted_constants) if first + j not in self._inlined
        )

    def _settle_threads(self, module) -> None:
        """At the first compile of a function with results of a shape unknown at `_bind`
        (a size read from an input, as PyMC's posterior predictive reads `pm.Data`'s
        shape), count the results of the module specialized to that call, and move to
        the client with a thread per core if they reach what `_bind` asks of results
        known before. Nothing has been compiled for the first client yet. Called under
        `_lock`."""
        size, self._unsettled = self._unsettled, None
        if size is None or self.platform != "cpu":
            return
        with self.lowered.lock:
            types = function_type(main_function(module)).results
        outputs = self.lowered.output_types
        results = sum(_static_nbytes(t) for t, out in zip(types, outputs) if not is_rng_type(out))
        if size + results >= LARGE_CALL_BYTES or (self._rng and results >= LARGE_DRAW_BYTES):
            self._use_client(True)

    def _run(self, args):
        if not self._bound:
            self._bind(args)
        if self._keep_pool is not None:
            self._keep_pool()
        staging = False
        if self._prepare:
            args, staging = self._prepared(args)
        given, tail = args, self._constant_buffers
        if self._packing is not None:
            args, tail = self._packed_call(args), ()
        try:
            previous = x64_on()  # (the dispatch would make float64 arguments float32)
            try:
                return self._dispatch.call(*args, *tail)
            finally:
                x64_restore(previous)
        except JaxRuntimeError as exc:  # XLA runs asynchronously: failures surface late
            raise _runtime_error(exc, [getattr(a, "shape", "?") for a in given]) from None
        except BaseException:
            if staging:  # the run may still read them: they go with it, and new ones come
                self._staging.clear()
            raise
        finally:
            if staging:
                self._staging_lock.release()

    def bind_storage(self, cells) -> None:
        """The storage cells (PyTensor containers' `storage` lists) the linker reads each
        input from. A shared variable's array that XLA cannot read where it is gets
        replaced there by an aligned copy, once: every later call reads that copy in
        place, in-place updates by functions of other modes included."""
        self._cells = {i: cells[i] for i in self._resident}

    def _prepared(self, args) -> tuple[list, bool]:
        """The arguments as XLA reads them fastest: a shared variable's array as XLA's
        buffer of it, kept while the same array comes back (the buffer reads the array
        in place, so changes made to it in place are seen); a large array XLA cannot
        read in place as an aligned copy (`_staged`). Also whether the call holds the
        staging buffers, which the caller releases once the results are read."""
        args = list(args)
        staging = False
        for i in self._resident:
            arg = args[i]
            held = self._held[i]
            if held is not None and held[0] is arg:
                args[i] = held[1]
                continue
            if type(arg) is not np.ndarray or arg.dtype != self._dtypes[i]:
                continue
            if not _in_place(arg):
                cell = self._cells.get(i)
                if cell is None or cell[0] is not arg:  # not ours to replace: copy at each call
                    args[i] = _aligned_copy(arg)
                    continue
                arg = cell[0] = _aligned_copy(arg)
            buffer = self._put(arg, arg.dtype)
            self._held[i] = (arg, buffer)
            args[i] = buffer
        for i in self._maybe_large:
            arg = args[i]
            if type(arg) is np.ndarray and arg.nbytes >= _ALIGN_FROM_BYTES and not _in_place(arg):
                if not staging:
                    staging = self._staging_lock.acquire(blocking=False)
                args[i] = self._staged(i, arg) if staging else _aligned_copy(arg)
        return args, staging

    def _staged(self, i: int, array: np.ndarray) -> np.ndarray:
        """An aligned copy of input `i`'s `array` in the buffer the function keeps for
        it. A fresh buffer costs more than the copy itself: the first write to each of
        its pages faults (10^6 float64s: about 0.65 ms of a call). Reusing one is safe
        because XLA reads the input during the call only, and no result is a view of it
        (XLA copies a parameter it returns); the caller holds `_staging_lock` until the
        results are read. Inputs over _STAGING_MAX_BYTES get a fresh copy each call, so
        that a function called once with a huge array does not keep its copy."""
        nbytes = array.nbytes
        if nbytes > _STAGING_MAX_BYTES:
            return _aligned_copy(array)
        buffer = self._staging.get(i)
        if buffer is None or buffer.nbytes < nbytes:
            buffer = self._staging[i] = _aligned_empty(nbytes)
        out = buffer[:nbytes].view(array.dtype).reshape(array.shape)
        np.copyto(out, array)
        return out

    def _packed_call(self, args) -> list:
        """The dispatch's arguments where small float64 inputs travel packed
        (`PackedArguments`): the other inputs, the constants, then one vector of the
        packed ones. Under trust_input, a packed input of another shape, even of as many
        elements, raises a ValueError naming it, and one of another dtype is converted as
        numpy converts it (a TypeError naming it where float64 cannot hold its kind)."""
        packing = self._packing
        parts = [args[i] for i in packing.parts]
        try:
            shapes = [a.shape for a in parts]
            dtypes = [a.dtype for a in parts]
        except AttributeError:  # a Python number, under trust_input
            shapes = [np.shape(a) for a in parts]
            dtypes = None
        if shapes != packing.shapes:
            i, shape, got = next(x for x in zip(packing.parts, packing.shapes, shapes) if x[1] != x[2])
            raise ValueError(f"input {i} ({self._names[i]}): expected shape {shape}, got {got}")
        if dtypes == packing.dtypes:  # float64 arrays: their bytes, joined (0.3 µs a part less)
            vector = np.frombuffer(b"".join([a.tobytes() for a in parts]))
        else:  # other numbers, under trust_input: converted as numpy converts them
            flat = [np.ravel(a) for a in parts]
            for i, a in zip(packing.parts, flat):
                if not np.can_cast(a.dtype, np.float64, "same_kind"):
                    raise TypeError(f"input {i} ({self._names[i]}): expected float64, got {a.dtype}")
            vector = np.concatenate(flat, dtype=np.float64)
        call = [args[i] for i in self._unpacked]
        call += self._constant_buffers
        call.append(vector)
        return call

    def _call_arguments(self, args) -> tuple[list, list]:
        """From the arguments the dispatch was called with: the function's inputs, and the
        dispatch's own arguments (without the constants) with their dtypes."""
        packing = self._packing
        if packing is None:
            args = list(args[: len(self._in_types)])
            return args, list(zip(args, self._dtypes))
        vector = args[-1]
        inputs = [None] * len(self._in_types)
        for j, i in enumerate(self._unpacked):
            inputs[i] = args[j]
        for i, (offset, shape) in packing.parts.items():
            inputs[i] = np.asarray(vector[offset : offset + int(np.prod(shape))]).reshape(shape)
        call = [(args[j], self._dtypes[i]) for j, i in enumerate(self._unpacked)]
        return inputs, call + [(vector, np.dtype(np.float64))]

    def _miss(self, *args):
        """A call the C++ dispatch has no executable for: find or compile one, run it,
        and hand it to the dispatch where its shapes and dtypes alone choose it."""
        args, call = self._call_arguments(args)
        try:
            shapes = tuple([a.shape for a in args])
        except AttributeError:
            i = next(i for i, a in enumerate(args) if not hasattr(a, "shape"))
            raise TypeError(f"input {i} ({self._names[i]}): expected an array, got {type(args[i]).__name__}") from None
        exe = self._by_shapes.get(shapes, False)
        if exe is False:
            exe = self._compile_for(shapes, None)
        by_shapes = exe is not None
        if exe is None:
            values = tuple((i, args[i].item()) for i in self._scalar_args)
            exe = self._by_values.get((shapes, values)) or self._compile_for(shapes, values)
        buffers = [self._put(a, dt) for a, dt in call]
        if self._packing is None:
            buffers += self._constant_buffers
        else:  # the vector last
            buffers[-1:-1] = self._constant_buffers
        if type(exe) is _Measured:
            by_shapes = False
            exe = self._measure(exe, buffers, shapes)
        try:
            results = exe.xla.execute_sharded(buffers).disassemble_into_single_device_arrays()
            results = [r[0] for r in results]
            outputs = exe.finish(results)
        except JaxRuntimeError as exc:
            raise _runtime_error(exc, shapes) from None
        if by_shapes and all(self._exactly(a, dt) for a, dt in call):
            return outputs, exe.fastpath(len(buffers), results, self._sharding)
        return outputs, None

    def _put(self, value, dtype):
        if _on_device(value, dtype, self._sharding):  # a resident input's copy
            return value
        arr = np.asarray(value)
        if arr.dtype != dtype:
            arr = arr.astype(dtype)
        return batched_device_put(
            _Aval(arr.shape, dtype), self._sharding, [arr], [self._device],
            True, False, HostBufferSemantics.ZERO_COPY, True,
        )

    def _exactly(self, arg, dtype) -> bool:
        """Whether the C++ dispatch may take `arg` as it is for an argument of `dtype`:
        a host array of that dtype, or a device array of it on our device. Anything
        else (another dtype; a jax array on jax's own client) goes through `_put`."""
        if type(arg) is np.ndarray or isinstance(arg, np.generic):
            return arg.dtype == dtype
        return _on_device(arg, dtype, self._sharding)

    # --- specialization -----------------------------------------------------------

    def _compile_for(self, shapes, values):
        """Specialize to `shapes` (and, if shapes depend on them, scalar values); compile."""
        try:
            return self._specialize_and_compile(shapes, values)
        except PassPipelineError as exc:
            detail = _first_diagnostic(str(exc))
            raise ValueError(
                f"{_arguments(shapes)} do not fit the graph: {detail}"
            ) from None

    def _specialize_and_compile(self, shapes, values):
        with self._lock:
            if values is None:
                if shapes in self._by_shapes:  # another thread compiled it meanwhile
                    return self._by_shapes[shapes]
                module = self.lowered.specialized_module(shapes)
                if self._scalar_args and not is_fully_static(module):
                    # Some shape may depend on a value: key on the scalar ints too.
                    _bounded_put(self._by_shapes, shapes, None, self.max_signatures)
                    return None  # the caller retries with values
                self._settle_threads(module)
                exe = self._executable(module, shapes, strict=False)
                _bounded_put(self._by_shapes, shapes, exe, self.max_signatures)
                return exe
            key = (shapes, values)
            if key in self._by_values:
                return self._by_values[key]
            module = self.lowered.specialized_module(shapes, values)
            if not is_fully_static(module):
                # The values did not make every size static (a while-Scan's trace is as
                # long as the steps taken, whatever the tolerance): keyed on them, each
                # new value would compile a probe and an executable of its own.
                measured = self._measured_for_all_values(shapes)
                if measured is not None:
                    return measured
            self._settle_threads(module)
            exe = self._executable(module, shapes)
            _bounded_put(self._by_values, key, exe, self.max_signatures)
            return exe

    def _measured_for_all_values(self, shapes):
        """The module refined to `shapes` alone, every `?` size measured by one probe, kept
        under the shapes so that all scalar values share it; None where that module's
        sizes cannot be measured (the caller then keys on the values)."""
        module = self.lowered.specialized_module(shapes)
        with self.lowered.lock:
            dims = runtime_dims(module)
        if dims is None:
            return None
        exe = self._executable(module, shapes)
        _bounded_put(self._by_shapes, shapes, exe, self.max_signatures)
        return exe

    def _executable(self, module, shapes, strict=True):
        """The executable of a specialized module; where shapes are left that the
        program computes itself, a `_Measured` that runs a probe first. Without
        `strict`, other `?` types are left to XLA (a result cast to `?`)."""
        if is_fully_static(module):
            return self._compile_checked(module, shapes)
        with self.lowered.lock:
            dims = runtime_dims(module)
        if dims is None and not strict and not has_dynamic_ops(module):
            return self._compile_checked(module, shapes)  # only a result typed `?` is left
        if dims is None:
            raise ValueError(
                "some output shapes could not be determined from the arguments' shapes "
                f"and scalar values ({', '.join(map(str, shapes))}), nor measured at run time "
                "(a size computed inside a loop, such as a while-Scan's length inside another Scan)"
            )
        with self.lowered.lock:
            probe = probe_module(dims, self.lowered.context)
        return _Measured(dims, self._compile_checked(probe, shapes, probe=True))

    def _measure(self, measured: "_Measured", buffers, shapes):
        """Run the probe, then the executable specialized to the sizes it measured
        (or, where those sizes decide further ones, the next round's probe)."""
        while True:
            results = measured.probe.xla.execute_sharded(buffers).disassemble_into_single_device_arrays()
            values = tuple(tuple(np.asarray(r[0]).tolist()) for r in results)
            exe = measured.executables.get(values)
            if exe is None:
                with self._lock:
                    try:
                        with self.lowered.lock:
                            module = bind_runtime_dims(measured.dims, self.lowered.context, values)
                        exe = self._executable(module, shapes, strict=False)
                    except PassPipelineError as exc:  # e.g. index arrays that cannot broadcast
                        raise ValueError(
                            f"{_arguments(shapes)} with the sizes measured at run time "
                            f"({', '.join(map(str, values))}) do not fit the graph: "
                            f"{_first_diagnostic(str(exc))}"
                        ) from None
                    _bounded_put(measured.executables, values, exe, self.max_signatures)
            if type(exe) is not _Measured:
                return exe
            measured = exe

    def _compile_checked(self, module, shapes, probe=False):
        """Compile, refusing before any allocation what cannot fit in the device's memory."""
        checked = bool(self._checks) and not probe
        packed = None
        self._unsettled = None  # the client is the one this compiles for
        with self.lowered.lock:
            if checked:
                checked = not drop_folded_checks(module)
            if not probe:
                packed = pack_small_results(module)
                executable_rewrites(module.operation, self.platform, self.fp_contraction)
            if self._inlined:
                inline_constants(module, self._inlined)
            if self._packing is not None:
                pack_small_arguments(module, self._packing)
        exe = compile_module(
            module, self.platform, self.fp_contraction, self.lowered.host_callbacks, self.lowered.lock,
            large=self._large,
        )
        needed = _bytes_needed(exe.get_compiled_memory_stats())
        available = self._device_memory
        if available and needed > available:
            raise MemoryError(
                f"{_arguments(shapes)} need {_gib(needed)} "
                f"at peak (outputs and temporaries), more than the {_gib(available)} "
                f"of {self._device.platform} memory"
            )
        return _Executable(exe, self._checks if checked else (), self._n_outputs, packed)

    def clear_cache(self) -> None:
        """Drop this function's executables (they compile again on the next call)."""
        with self._lock:
            self._by_shapes.clear()
            self._by_values.clear()
            self._dispatch.clear()

    def specialized_text(self, *args) -> str:
        """The module this call signature runs (after refinement), as text."""
        return str(self.lowered.specialize(*[self._filter(i, a) for i, a in enumerate(args)]))


# Every Compiled of this process, so that a forked child can disarm their executables.
_LIVE: weakref.WeakSet = weakref.WeakSet()


class _Forked:
    """The dispatch of a Compiled in a child forked after XLA started: it raises."""

    def call(self, *args):
        raise ForkedProcessError()


def _disarm_after_fork() -> None:
    for compiled in list(_LIVE):
        compiled._dispatch = _Forked()


on_fork_after_xla(_disarm_after_fork)


def rng_keys(plan, args):
    """`args` with each Generator replaced by a key drawn from it, and the Generators
    the graph's generator outputs return (input index -> Generator).

    A Generator PyTensor updates in place is advanced; any other is left as it was
    (the key is peeked), and an output derived from it gets an advanced copy.
    """
    args = list(args)
    generators = {}
    for i in plan.inputs:
        gen = args[i]
        if i in plan.in_place:
            args[i] = gen.bit_generator.random_raw(1).view(np.uint32)
            generators[i] = gen
        elif i in plan.copied:
            generators[i] = copy = copy_generator(gen)
            args[i] = copy.bit_generator.random_raw(1).view(np.uint32)
        else:
            args[i] = peek_key(gen)
    return args, generators


def peek_key(generator: np.random.Generator) -> np.ndarray:
    """The key the next draw from `generator` gives, leaving it as it was."""
    bits = generator.bit_generator
    with bits.lock:
        state = bits.state
        key = bits.random_raw(1).view(np.uint32)
        bits.state = state
    return key


def copy_generator(generator: np.random.Generator) -> np.random.Generator:
    """An independent Generator in `generator`'s state (`copy.deepcopy` takes 80 µs)."""
    bits = type(generator.bit_generator)(0)
    bits.state = generator.bit_generator.state
    return np.random.Generator(bits)


def generator_from_key(key) -> np.random.Generator:
    """A Generator seeded from a key the module returned."""
    words = np.asarray(key if type(key) is np.ndarray else _to_numpy(key), dtype=np.uint32)
    return np.random.default_rng([int(w) for w in words])


class _Executable:
    """An XLA executable, and how its results become the function's outputs: where its
    small results are packed (`specialize.pack_small_results`), and the run-time checks
    whose flags follow the `n_outputs` outputs (none where specialization folded them)."""

    __slots__ = ("xla", "checks", "n_outputs", "packed", "_fastpath")

    def __init__(self, xla, checks, n_outputs: int, packed=None):
        self.xla = xla
        self.checks = checks
        self.n_outputs = n_outputs
        # The flags are read for their truth only: a packed one needs no bool copy.
        raw = (n_outputs,) if checks else ()
        self.packed = None if packed is None else _Unpacking(packed, raw, n_outputs)
        self._fastpath = None

    def finish(self, results) -> list:
        """The outputs, as numpy arrays the caller owns, from @main's results (device
        arrays); raises the first run-time check that failed."""
        packed = self.packed
        if packed is not None and packed.whole is not None:  # all in the one vector
            host = np.array(results[-1])  # the caller's copy (one call: asarray + copy)
            if self.checks:
                self._raise_failed(host[packed.flags].tolist())
            if packed.float64:
                return [host[a:b] if shape is None else host[a:b].reshape(shape) for a, b, _, shape in packed.whole]
            return [_read(host, *view) for view in packed.whole]
        if packed is not None:
            results = _unpack(packed, results)
        if self.checks:
            flags = results[self.n_outputs]
            self._raise_failed((flags if type(flags) is np.ndarray else np.asarray(flags)).tolist())
        return [r if type(r) is np.ndarray else _to_numpy(r) for r in results[: self.n_outputs]]

    def _raise_failed(self, flags: list) -> None:
        """The first failed check's error, if any flag is set (a list: cheaper than numpy's
        reduction on a few flags)."""
        if any(flags):
            check = self.checks[next(i for i, f in enumerate(flags) if f)]
            error = check.error(check.message)
            error.__op_instance__ = check.node  # PyTensor's name for the failing node
            raise error

    def fastpath(self, n_args: int, results, sharding):
        """What the C++ dispatch needs to run this executable on its own (built once)."""
        if self._fastpath is None:
            tree = finishing_tree(self.finish, len(results))
            self._fastpath = fastpath_data(self.xla, tree, n_args, results, sharding)
        return self._fastpath


# XLA's CPU client reads a numpy argument in place only if it starts at a 64-byte
# boundary and is C-contiguous; numpy's large allocations start 16 bytes past one. XLA's
# own copy of the others is slow (38 ms for 40 MB on our CI machine, where numpy
# copies it in 5-9 ms), so large ones get numpy's copy first.
_XLA_ALIGNMENT = 64
_ALIGN_FROM_BYTES = 1 << 16


def _reads_host_memory(device) -> bool:
    """Whether `device`'s client reads a host array in place (zero copy)."""
    return device.platform == "cpu"


def _static_nbytes(tensor_type) -> int:
    """The bytes of a tensor of this type (a PyTensor type, or an MLIR one of the
    specialized module), where its shape is known; else 0."""
    if isinstance(tensor_type, ir.Type):
        t = ir.RankedTensorType(tensor_type)
        if not t.has_static_shape:
            return 0
        return int(np.prod(t.shape)) * np.dtype(dtype_of(t)).itemsize
    shape = getattr(tensor_type, "shape", None)
    if shape is None or None in shape or is_rng_type(tensor_type):
        return 0
    return int(np.prod(shape)) * np.dtype(storage_dtype(tensor_type)).itemsize


def _may_be_large(tensor_type) -> bool:
    shape = getattr(tensor_type, "shape", None)
    if shape is None or is_rng_type(tensor_type):
        return False
    return None in shape or _static_nbytes(tensor_type) >= _ALIGN_FROM_BYTES


def _in_place(array: np.ndarray) -> bool:
    """Whether XLA's CPU client can read `array` where it is."""
    return array.flags.c_contiguous and array.ctypes.data % _XLA_ALIGNMENT == 0


# The largest input whose aligned copy a function keeps for its next calls (`_staged`).
_STAGING_MAX_BYTES = 1 << 27


def _aligned_empty(nbytes: int) -> np.ndarray:
    """`nbytes` uninitialized bytes at a 64-byte boundary."""
    raw = np.empty(nbytes + _XLA_ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % _XLA_ALIGNMENT
    return raw[start : start + nbytes]


def _aligned_copy(array: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of `array` at a 64-byte boundary."""
    out = _aligned_empty(array.nbytes).view(array.dtype).reshape(array.shape)
    np.copyto(out, array)
    return out


def _on_device(value, dtype, sharding) -> bool:
    """Whether `value` is a device array of `dtype` on `sharding`'s device (our client's;
    jax's own CPU client is another)."""
    return isinstance(value, Array) and value.dtype == dtype and value.sharding == sharding


class _Unpacking:
    """How to rebuild the result list from an executable with packed results. `whole`:
    where every result is in the one vector, the outputs' views of it in order, `flags`
    the slice of the checks' flags, and `float64` whether no output converts back."""

    __slots__ = ("n", "kept", "views", "whole", "flags", "float64")

    def __init__(self, packed, raw=(), n_outputs: int | None = None):
        """`raw`: results to leave as float64 slices whatever their dtype."""
        self.n = len(packed.kept) + len(packed.parts)
        self.kept = packed.kept
        self.views = []
        for i, (offset, dtype, shape) in packed.parts.items():
            stop = offset + int(np.prod(shape))
            self.views.append((
                i, offset, stop,
                None if dtype == np.float64 or i in raw else dtype,
                None if shape == (stop - offset,) else shape,  # a slice has it already
            ))
        self.whole = self.flags = None
        if not self.kept and n_outputs is not None:
            views = sorted(self.views)
            self.whole = [view[1:] for view in views[:n_outputs]]
            self.flags = next((slice(v[1], v[2]) for v in views[n_outputs:]), None)
        # Every output float64: read with no conversion (no call per output).
        self.float64 = self.whole is not None and all(dtype is None for _, _, dtype, _ in self.whole)


def _read(host: np.ndarray, start: int, stop: int, dtype, shape) -> np.ndarray:
    """A packed result: its view of the host copy, reshaped, converted back to its dtype."""
    part = host[start:stop] if shape is None else host[start:stop].reshape(shape)
    return part if dtype is None else part.astype(dtype)


def _unpack(unpacking: _Unpacking, results) -> list:
    """The results in @main's original order: packed float64 ones as views of one host
    copy (the caller owns it), other packed ones converted back, the rest as device
    arrays."""
    out = [None] * unpacking.n
    for i, r in zip(unpacking.kept, results):
        out[i] = r
    host = np.asarray(results[-1]).copy()
    for i, start, stop, dtype, shape in unpacking.views:
        out[i] = _read(host, start, stop, dtype, shape)
    return out


class _Measured:
    """Executables of one signature whose shapes the program computes (a while-Scan's
    trip count): `probe` returns the sizes, keyed to the executable for them."""

    def __init__(self, dims, probe):
        self.dims = dims
        self.probe = probe
        self.executables: dict = {}


def _bounded_put(cache: dict, key, value, limit: int) -> None:
    """Insert, dropping the oldest entries beyond `limit` (lookups stay plain dict gets)."""
    cache[key] = value
    while len(cache) > limit:
        del cache[next(iter(cache))]


def _device_memory(device) -> int | None:
    """Bytes of memory XLA may use on `device`: the GPU's limit, the host's RAM on CPU."""
    stats = device.memory_stats()
    if stats and "bytes_limit" in stats:
        return stats["bytes_limit"]
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _bytes_needed(stats) -> int:
    """What running an executable allocates beyond its arguments: XLA's simulated peak,
    but at least its temporary buffer and new outputs, which it allocates whole. (For
    `arange(10**12).sum()` XLA's CPU client reported a peak of 112 bytes and a
    temporary buffer of 8.25 TB.)"""
    fresh = stats.temp_size_in_bytes + stats.output_size_in_bytes - stats.alias_size_in_bytes
    return max(stats.peak_memory_in_bytes, fresh)


def _arguments(shapes) -> str:
    return f"arguments of shapes {', '.join(map(str, shapes))}"


def _gib(n: int) -> str:
    return f"{n / 2**30:.3g} GiB"


def _runtime_error(exc: JaxRuntimeError, shapes) -> Exception:
    """XLA's run-time failure as a one-line Python error naming the call's shapes."""
    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    where = _arguments(shapes)
    if "RESOURCE_EXHAUSTED" in message:
        return MemoryError(f"{where}: XLA ran out of memory ({message})")
    return RuntimeError(f"{where}: XLA execution failed ({message})")


def _first_diagnostic(message: str) -> str:
    """The first `error:` line of an MLIR diagnostic, which names the PyTensor node."""
    for line in message.splitlines():
        if line.strip().startswith("error:"):
            return line.strip()[len("error:"):].strip()
    return message.splitlines()[0]
