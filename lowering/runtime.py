"""Compiled: argument checks, device buffers, execution, numpy outputs.

Specialization happens here, per call signature: the first call with new shapes
refines the polymorphic module and compiles it; later calls hit a dict.
"""

from __future__ import annotations

import threading

import numpy as np

from jax.sharding import SingleDeviceSharding

from lowering._jax_internal import HostBufferSemantics, batched_device_put, to_numpy as _to_numpy
from lowering.compile import compile_bytecode, get_backend, module_bytecode
from lowering.errors import PassPipelineError
from lowering.specialize import is_fully_static, scalar_arguments


class _Aval:
    """The (shape, dtype) record `batched_device_put` asks for."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype
        self.weak_type = False


class Compiled:
    """A lowered graph, callable with numpy arrays; compiles once per input signature."""

    def __init__(self, lowered, platform: str = "cpu"):
        self.lowered = lowered
        self.platform = platform
        self._backend = get_backend(platform)
        self._device = self._backend.local_devices()[0]
        self._sharding = SingleDeviceSharding(self._device)
        self._in_types = lowered.input_types
        self._dtypes = tuple(np.dtype(t.dtype) for t in self._in_types)
        self._names = [lowered.input_names[i] for i in range(len(self._in_types))]
        self._scalar_args = scalar_arguments(self._in_types)
        self._constant_buffers = None
        self._checks = lowered.runtime_checks
        self._n_outputs = len(lowered.output_types)
        # shapes -> executable, or -> None when the shapes need argument values too.
        self._by_shapes: dict = {}
        self._by_values: dict = {}
        self._lock = threading.Lock()

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
        try:
            return self._in_types[i].filter(value, strict=False, allow_downcast=None)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"input {i} ({self._names[i]}): {exc}") from None

    def call_trusted(self, args):
        """Run on arguments that already have the right dtype and rank (PyTensor's filter ran)."""
        shapes = tuple([a.shape for a in args])
        exe = self._by_shapes.get(shapes, False)
        if exe is False:
            exe = self._compile_for(shapes, None)
        if exe is None:
            values = tuple((i, args[i].item()) for i in self._scalar_args)
            exe = self._by_values.get((shapes, values)) or self._compile_for(shapes, values)
        buffers = [self._put(a, dt) for a, dt in zip(args, self._dtypes)]
        buffers += self._constants()
        results = exe.execute_sharded(buffers).disassemble_into_single_device_arrays()
        if self._checks:
            self._raise_failed_checks(results[self._n_outputs:])
            results = results[: self._n_outputs]
        return [_to_numpy(r[0]) for r in results]

    def _raise_failed_checks(self, flags) -> None:
        for check, flag in zip(self._checks, flags):
            if _to_numpy(flag[0]).item():
                raise check.error(check.message)

    def _put(self, value, dtype):
        arr = np.asarray(value)
        if arr.dtype != dtype:
            arr = arr.astype(dtype)
        return batched_device_put(
            _Aval(arr.shape, dtype), self._sharding, [arr], [self._device],
            True, False, HostBufferSemantics.ZERO_COPY, True,
        )

    def _constants(self):
        if self._constant_buffers is None:
            self._constant_buffers = [
                self._put(c.value, c.value.dtype) for c in self.lowered.hoisted_constants
            ]
        return self._constant_buffers

    # --- specialization -----------------------------------------------------------

    def _compile_for(self, shapes, values):
        """Specialize to `shapes` (and, if shapes depend on them, scalar values); compile."""
        try:
            return self._specialize_and_compile(shapes, values)
        except PassPipelineError as exc:
            detail = _first_diagnostic(str(exc))
            raise ValueError(
                f"arguments of shapes {', '.join(map(str, shapes))} do not fit the graph: {detail}"
            ) from None

    def _specialize_and_compile(self, shapes, values):
        with self._lock:
            if values is None:
                module = self.lowered.specialized_module(shapes)
                if not self._scalar_args or is_fully_static(module):
                    exe = compile_bytecode(module_bytecode(module), self.platform)
                    self._by_shapes[shapes] = exe
                    return exe
                # Some shape still depends on a value: key on the scalar ints too.
                self._by_shapes[shapes] = None
                return None  # the caller retries with values
            module = self.lowered.specialized_module(shapes, values)
            if not is_fully_static(module):
                raise ValueError(
                    "some output shapes could not be determined from the arguments' shapes "
                    f"and scalar values ({', '.join(map(str, shapes))})"
                )
            exe = compile_bytecode(module_bytecode(module), self.platform)
            self._by_values[(shapes, values)] = exe
            return exe

    def specialized_text(self, *args) -> str:
        """The module this call signature runs (after refinement), as text."""
        return str(self.lowered.specialize(*[self._filter(i, a) for i, a in enumerate(args)]))


def _first_diagnostic(message: str) -> str:
    """The first `error:` line of an MLIR diagnostic, which names the PyTensor node."""
    for line in message.splitlines():
        if line.strip().startswith("error:"):
            return line.strip()[len("error:"):].strip()
    return message.splitlines()[0]
