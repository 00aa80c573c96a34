"""Blockwise of core Ops with no batched rule: the core Op per batch entry, in a loop."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.builders import OpFromGraph
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.replace import vectorize_graph
from pytensor.tensor.blockwise import Blockwise

from lowering import UnsupportedParameterError, lower
from tests.helpers import PY_MODE, compare_each_with_py, compare_with_py


def _blockwise_nodes(outputs):
    fgraph = FunctionGraph(outputs=outputs, clone=False)
    return [n for n in fgraph.apply_nodes if isinstance(n.op, Blockwise)]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "uint16", "bool", "complex128"])
def test_eye_with_a_diagonal_per_entry(dtype):
    k, kb = pt.lscalar("k"), pt.lvector("kb")
    out = vectorize_graph(pt.eye(3, 4, k, dtype=dtype), {k: kb})
    assert _blockwise_nodes([out])  # PyTensor keeps Blockwise(Eye): no batched rule
    compare_with_py([kb], [out], [np.array([0, 1, -1, 5, -3])])
    assert "stablehlo.while" in lower(FunctionGraph([kb], [out])).as_text()


def test_two_batch_dims_broadcast_and_index_per_entry():
    x, k = pt.matrix("x"), pt.lscalar("k")
    xb = pt.tensor4("xb")
    kb = pt.tensor("kb", dtype="int64", shape=(1, None))  # broadcasts over the first batch dim
    out = vectorize_graph(x[k] * 2, {x: xb, k: kb})
    values = [np.arange(2 * 3 * 4 * 5, dtype="float64").reshape(2, 3, 4, 5), np.array([[0, -1, 2]])]
    compare_with_py([xb, kb], [out], values)


def test_entries_of_a_run_time_batch_are_read_where_they_are():
    """The per-entry loop reads operands at least one entry long; a batch of run-time
    size gets a zero entry appended and max(n, 1) kept, which folds away for a call
    with n > 0: the executable reads the argument in place, not a padded copy."""
    x, k = pt.matrix("x"), pt.lscalar("k")
    xb, kb = pt.tensor3("xb"), pt.lvector("kb")
    out = vectorize_graph(x[k] * 2, {x: xb, k: kb})
    assert _blockwise_nodes([out])
    rng = np.random.default_rng(3)
    long = [rng.normal(size=(37, 4, 5)), rng.integers(-4, 4, size=37)]
    compare_each_with_py([xb, kb], [out], [long, [rng.normal(size=(1, 4, 5)), np.array([2])]])
    fn = pytensor.function([xb, kb], out, mode="STABLEHLO")
    fn(*long)
    (executable,) = fn.vm.jit_fn.compiled._by_shapes.values()
    hlo = executable.xla.hlo_modules()[0].to_string()
    assert "f64[38,4,5]" not in hlo and "s64[38]" not in hlo


def test_checks_of_every_entry_are_raised():
    x, k = pt.matrix("x"), pt.lscalar("k")
    xb, kb = pt.tensor3("xb"), pt.lvector("kb")
    out = vectorize_graph(x[k], {x: xb, k: kb})
    fn = pytensor.function([xb, kb], out, mode="STABLEHLO")
    fn(np.zeros((3, 4, 2)), np.array([0, 3, -4]))
    with pytest.raises(IndexError, match="index out of bounds"):  # the last entry only
        fn(np.zeros((3, 4, 2)), np.array([0, 3, 4]))
    with pytest.raises(IndexError):
        pytensor.function([xb, kb], out, mode=PY_MODE)(np.zeros((3, 4, 2)), np.array([0, 3, 4]))


def test_mismatched_batch_dims_raise():
    x, k = pt.matrix("x"), pt.lscalar("k")
    xb, kb = pt.tensor3("xb"), pt.lvector("kb")
    out = vectorize_graph(x[k], {x: xb, k: kb})
    values = [np.zeros((3, 4, 2)), np.array([0, 1])]
    with pytest.raises(ValueError):
        pytensor.function([xb, kb], out, mode=PY_MODE)(*values)
    fn = pytensor.function([xb, kb], out, mode="STABLEHLO")
    with pytest.raises(ValueError, match="batch dims do not match"):
        fn(*values)


def test_op_from_graph_with_several_outputs_runs_per_entry():
    """An OpFromGraph whose vectorized graph would need Blockwise(Eye): the whole inner
    graph runs per entry, each output written at its entry."""
    x, k = pt.matrix("x"), pt.lscalar("k")
    core = OpFromGraph([x, k], [pt.eye(3, 3, k) @ x, x.sum().astype("float32")])
    xb, kb = pt.tensor3("xb"), pt.lvector("kb")
    outputs = vectorize_graph(core(x, k), {x: xb, k: kb})
    rng = np.random.default_rng(0)
    compare_with_py([xb, kb], outputs, [rng.normal(size=(4, 3, 2)), np.array([0, 1, -2, 2])])


def test_op_from_graph_sized_by_its_inputs_shapes_runs_as_one_batch():
    """Sizes an inner graph takes from its inputs' shapes are the same for every entry:
    its eye, alloc and block writes lower over the whole batch, with no loop over entries
    (PyTensor's vectorized Shape broadcasts them over the batch, as values per entry)."""
    x = pt.matrix("x")
    n = x.shape[0]
    block = pt.zeros((2 * n, 2 * n))
    block = pt.set_subtensor(block[:n, :n], x)
    block = pt.set_subtensor(block[n:, n:], pt.eye(n))
    core = OpFromGraph([x], [block[:, n:] * 2, block[:n].sum(-1)])
    xb = pt.tensor3("xb")
    outputs = vectorize_graph(core(x), {x: xb})
    assert "stablehlo.while" not in lower(FunctionGraph([xb], outputs, clone=True)).as_text()
    values = np.random.default_rng(1).normal(size=(4, 3, 3))
    compare_with_py([xb], outputs, [values], rtol=0, atol=0)
    empty = pytensor.function([xb], outputs, mode="STABLEHLO")(values[:0])  # perform refuses it
    assert [v.shape for v in empty] == [(0, 6, 3), (0, 3)]


def test_empty_batch_gives_empty_outputs():
    # Blockwise.perform raises NotImplementedError on an empty batch (README: knowingly differ).
    k, kb = pt.lscalar("k"), pt.lvector("kb")
    out = vectorize_graph(pt.eye(3, 4, k), {k: kb})
    got = pytensor.function([kb], out, mode="STABLEHLO")(np.zeros(0, dtype="int64"))
    assert got.shape == (0, 3, 4) and got.dtype == "float64"


def test_core_shapes_from_entry_values_are_refused():
    n, nb = pt.lscalar("n"), pt.lvector("nb")
    out = vectorize_graph(pt.eye(n), {n: nb})
    with pytest.raises(UnsupportedParameterError, match=r"values of input \d \(nb\)"):
        lower(FunctionGraph([nb], [out]))


def test_reshape_with_a_shape_per_entry():
    """Blockwise(Reshape), as PyTensor's einsum builds it: one batched reshape once the
    entries agree on a shape (after numpy's -1 is resolved), an error where they differ."""
    core, shape = pt.dvector("core"), pt.lvector("shape", shape=(2,))
    x, s = pt.dmatrix("x"), pt.lmatrix("s", shape=(None, 2))
    out = vectorize_graph(core.reshape(shape, ndim=2), {core: x, shape: s})
    assert isinstance(out.owner.op, Blockwise)
    values = np.arange(12.0).reshape(2, 6)
    compare_each_with_py([x, s], [out], [[values, np.array(requests)]
                                         for requests in ([[2, 3], [2, 3]], [[-1, 3], [2, -1]], [[6, -1], [6, 1]])])
    f = pytensor.function([x, s], out, mode="STABLEHLO")
    with pytest.raises(ValueError, match="batch entries ask for different shapes"):
        f(values, np.array([[2, 3], [3, 2]]))
    with pytest.raises(ValueError, match="sizes differ"):
        f(values, np.array([[4, 3], [4, 3]]))
    assert f(np.zeros((0, 6)), np.zeros((0, 2), "int64")).shape == (0, 6, 1)


def test_split_with_the_same_sizes_for_every_entry():
    """Blockwise(Split) with an unbatched axis and sizes (a vectorized jacobian of a rolled
    vector, or of packed variables, builds it): one Split behind the batch dims, its sizes
    read at run time or constant; sizes per entry would make entries of different shapes
    (refused)."""
    from pytensor.gradient import jacobian

    x = pt.dvector("x")
    out = jacobian(pt.roll(x, 2) * x, x, vectorize=True)
    assert any(isinstance(n.op.core_op, pt.basic.Split) for n in _blockwise_nodes([out]))
    compare_each_with_py([x], [out], [[np.arange(5.0)], [np.arange(1.0)], [np.array([2.0, -1.0, 3.0])]])
    assert pytensor.function([x], out, mode="STABLEHLO")(np.zeros(0)).shape == (0, 0)
    m, sizes, axis = pt.dmatrix("m"), pt.lvector("sizes"), 0
    batched = pt.tensor3("batched")
    parts = vectorize_graph(pt.split(m, sizes, n_splits=2, axis=axis), {m: batched})
    assert isinstance(parts[0].owner.op, Blockwise)
    compare_with_py([batched, sizes], parts, [np.arange(24.0).reshape(2, 4, 3), np.array([1, 3])])
    with pytest.raises(ValueError, match="Split: the split sizes do not sum to the length of axis 1"):
        pytensor.function([batched, sizes], parts, mode="STABLEHLO")(np.zeros((2, 4, 3)), np.array([1, 1]))
    per_entry = vectorize_graph(pt.split(m, sizes, n_splits=2, axis=axis), {m: batched, sizes: pt.lmatrix("sb")})
    with pytest.raises(UnsupportedParameterError, match="split sizes that vary by batch entry"):
        lower(FunctionGraph(outputs=per_entry, clone=False))


def test_einsum_with_an_index_shared_by_three_operands():
    x, y, m = pt.dvector("x"), pt.dvector("y"), pt.dmatrix("m")
    outs = [pt.einsum("i,j,i->ij", x, y, x), pt.einsum("ij,i->ij", m, x)]
    compare_with_py([x, y, m], outs, [np.arange(3.0), np.arange(1.0, 3.0), np.arange(6.0).reshape(3, 2)])
    compare_with_py([x, y], outs[:1], [np.zeros(0), np.arange(1.0, 3.0)])
