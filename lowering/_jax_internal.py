"""Every use of a jax/jaxlib internal name lives here, so an upgrade touches one file."""

from __future__ import annotations

import dataclasses
import functools
import threading

import numpy as np

from jax._src import config as _config
from jax._src import core as _core
from jax._src import tree_util as _tree_util
from jax._src.interpreters import pxla as _pxla
from jax._src.interpreters.mlir import make_ir_context as _make_ir_context
from jax._src.lib import _jax
from jax._src.lib import xla_client as _xc
from jaxlib.mlir._mlir_libs import _mlirHlo, _stablehlo

_passes_registered = False
_lock = threading.Lock()


def register_passes() -> None:
    """Register the StableHLO and MHLO passes with MLIR's global pass registry (once)."""
    global _passes_registered
    with _lock:
        if not _passes_registered:
            _stablehlo.register_stablehlo_passes()
            _mlirHlo.register_mhlo_passes()
            _passes_registered = True


def make_ir_context():
    """An MLIR context with func, stablehlo, chlo, mhlo and sdy loaded."""
    register_passes()
    return _make_ir_context()


DeviceList = _xc.DeviceList
xla_client = _xc
HostBufferSemantics = _xc.HostBufferSemantics
batched_device_put = _xc.batched_device_put
serialize_portable_artifact = _stablehlo.serialize_portable_artifact
deserialize_portable_artifact = _stablehlo.deserialize_portable_artifact
get_current_version = _stablehlo.get_current_version


class _HostView:
    """Exposes a CPU buffer to numpy as writable memory, keeping the buffer alive.

    The result buffer belongs to nobody but the caller once execution returns, so
    handing it out writable (as every other PyTensor backend does) is safe.
    """

    __slots__ = ("array", "__array_interface__")

    def __init__(self, array, host):
        self.array = array
        self.__array_interface__ = {
            "shape": host.shape,
            "typestr": host.dtype.str,
            "data": (host.__array_interface__["data"][0], False),
            "version": 3,
        }


# Below this many bytes a result is copied: a copy (~1 µs) is cheaper than making a
# writable view of the XLA buffer (~7 µs), and far cheaper than jaxlib's
# `_single_device_array_to_np_array_did_copy` (~20 µs a result).
_COPY_BELOW_BYTES = 1 << 16


def to_numpy(array):
    """A single-device jax Array as a writable numpy array the caller owns: a copy when
    small, a view of the XLA buffer (no copy on CPU) when large."""
    host = np.asarray(array)
    if host.flags.writeable:
        return host
    if host.nbytes < _COPY_BELOW_BYTES:
        return host.copy()
    return np.asarray(_HostView(array, host))


class Dispatch:
    """jaxlib's C++ dispatch (what `jax.jit` calls through) around our own executables.

    The first call with a new argument signature (shapes, dtypes) runs `miss(*args)`,
    which returns `(outputs, fastpath)`; where `fastpath` is not None, later calls with
    that signature put numpy arguments on the device, execute and build the outputs in
    C++, never entering Python until the outputs are unflattened. `fastpath` comes from
    `fastpath_data`. Calls must run with 64-bit types enabled (`x64`), or the C++ side
    would narrow float64 arguments to float32. Under `jax.disable_jit()` the C++ side
    bypasses its cache and calls `miss` for the outputs alone, every call.
    """

    __slots__ = ("call", "_cache")

    def __init__(self, name: str, miss):
        def cache_miss(*args):
            outputs, fastpath = miss(*args)
            return outputs, fastpath, False

        def uncached(*args):
            return miss(*args)[0]

        # One function per cache (its capacity counts functions); the entries per
        # signature live in it until `clear`.
        self._cache = _jax.PjitFunctionCache(capacity=1)
        self.call = _jax.pjit(
            name, uncached, cache_miss, [], [], _pxla.JitGlobalCppCacheKeys(),
            _tree_util.dispatch_registry, _pxla.cc_shard_arg, self._cache,
        )

    def clear(self) -> None:
        self._cache.clear()


class _Unflattened:
    """A pytree node whose unflattening hands its arrays to a function (its node data)."""

    __slots__ = ("finish", "arrays")

    def __init__(self, finish, arrays):
        self.finish = finish
        self.arrays = arrays


_tree_util.register_pytree_node(
    _Unflattened, lambda node: (node.arrays, node.finish), lambda finish, arrays: finish(arrays)
)


def finishing_tree(finish, n: int):
    """A pytree definition of `n` arrays whose unflattening returns `finish(arrays)`:
    how `Dispatch`'s C++ side hands an executable's results to Python."""
    return _tree_util.tree_structure(_Unflattened(finish, list(range(n))))


def fastpath_data(xla, out_tree, n_args: int, results, sharding):
    """What `Dispatch` needs to run `xla` without Python: its `n_args` arguments and its
    results (arrays of one execution, for their shapes and dtypes) on `sharding`'s
    device; `out_tree` rebuilds the outputs from the result arrays."""
    return _pxla.MeshExecutableFastpathData(
        xla, out_tree, [sharding] * n_args, [sharding] * len(results),
        [_core.ShapedArray(r.shape, r.dtype) for r in results], [True] * len(results),
        [True] * n_args, [None] * n_args, [],
    )


def enable_x64():
    """A context in which jax keeps 64-bit types (thread-local, ~1.5 µs to enter)."""
    return _config.enable_x64(True)


_X64 = _config.enable_x64

if getattr(_X64, "_update_thread_local_hook", True) is None and hasattr(_X64, "swap_local"):
    # What `enable_x64()`'s context manager does on entry and exit, without building it
    # and its parser's call each time: 0.12 µs against 0.58 a call.

    def x64_on():
        """Turn jax's 64-bit types on in this thread; what `x64_restore` takes back."""
        return _X64.swap_local(True)

    def x64_restore(previous) -> None:
        _X64.set_local(previous)

else:  # a jax whose flag has a thread-local hook: through its context manager

    def x64_on():
        context = enable_x64()
        context.__enter__()
        return context

    def x64_restore(previous) -> None:
        previous.__exit__(None, None, None)


def compatibility_version(weeks: int = 12) -> str:
    """The StableHLO version a consumer at least `weeks` old can read (jax.export's rule)."""
    requirement = {
        4: _stablehlo.StablehloCompatibilityRequirement.WEEK_4,
        12: _stablehlo.StablehloCompatibilityRequirement.WEEK_12,
    }[weeks]
    return _stablehlo.get_version_from_compatibility_requirement(requirement)


def make_jax_exported(artifact: bytes, in_avals, out_avals, platform: str):
    """A `jax.export.Exported` around a portable artifact whose @main takes and returns
    exactly `in_avals`/`out_avals` (static shapes, one device, no effects)."""
    from jax import export, tree_util
    from jax._src import core

    ins = tuple(core.ShapedArray(shape, dtype) for shape, dtype in in_avals)
    outs = tuple(core.ShapedArray(shape, dtype) for shape, dtype in out_avals)
    fields = dict(
        fun_name="main",
        in_tree=tree_util.tree_structure((tuple(range(len(ins))), {})),
        in_avals=ins,
        out_tree=tree_util.tree_structure(tuple(range(len(outs)))),
        out_avals=outs,
        _has_named_shardings=True,
        _in_named_shardings=(None,) * len(ins),
        _out_named_shardings=(None,) * len(outs),
        in_shardings_hlo=(None,) * len(ins),
        out_shardings_hlo=(None,) * len(outs),
        nr_devices=1,
        platforms=(platform,),
        ordered_effects=(),
        unordered_effects=(),
        disabled_safety_checks=(),
        mlir_module_serialized=artifact,
        calling_convention_version=10,
        module_kept_var_idx=tuple(range(len(ins))),
        uses_global_constants=False,
        _get_vjp=None,
    )
    # Sharding fields come and go between jax versions (jax 0.11.2 refuses
    # `_has_named_shardings`); ours all say "unsharded", which is what a field a version
    # lacks means too.
    known = {f.name for f in dataclasses.fields(export.Exported)}
    return export.Exported(**{k: v for k, v in fields.items() if k in known})


@functools.cache
def lapack_target(routine: str, dtype) -> str:
    """The typed-FFI LAPACK target jaxlib registers with the CPU client for `routine`
    (potrf, getrf, ...) in `dtype`, with jaxlib's LAPACK loaded."""
    from jax._src.lib import lapack

    load_lapack()
    return lapack.build_lapack_fn_target(f"{routine}_ffi", np.dtype(dtype))


@functools.cache
def load_lapack() -> None:
    """Register jaxlib's LAPACK targets with XLA and point them at scipy's LAPACK: for the
    rules that emit them (`lapack_target`), and for a module this process did not lower
    (a portable artifact read back), whose unloaded target would crash the process when
    it runs (`compile_bytecode`)."""
    from jax._src.lax import linalg  # noqa: F401  (registers the targets with XLA)
    from jax._src.lib import lapack

    lapack._lapack.initialize()
