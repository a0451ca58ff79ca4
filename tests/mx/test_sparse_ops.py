"""Operations on MXNet 1.x sparse arrays (kiln/mx/nd/sparse/ops.py): values equal to NumPy's
on the dense arrays, result storage as MXNet 1.9.1 gives it, and the dense fallback warns."""
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("scipy.sparse")

from kiln import nd  # noqa: E402
from kiln._core.base import KilnError  # noqa: E402
from kiln.backend.fallbacks import KilnPerformanceWarning  # noqa: E402
from kiln.mx.nd.sparse import rand_sparse_ndarray  # noqa: E402


def _pair(shape=(6, 5), density=0.4, seed=0):
    np.random.seed(seed)
    a = (np.random.rand(*shape) < density) * np.random.rand(*shape)
    b = (np.random.rand(*shape) < density) * np.random.rand(*shape)
    return a.astype(np.float32), b.astype(np.float32)


# (expression, result storage) as MXNet 1.9.1 gives them; c csr, r row_sparse, d dense
STORAGE = [
    ("c + c", lambda e: e.c + e.c, "csr"),
    ("c - c", lambda e: e.c - e.c, "csr"),
    ("c * c", lambda e: e.c * e.c, "csr"),
    ("r + r", lambda e: e.r + e.r, "row_sparse"),
    ("r - r", lambda e: e.r - e.r, "row_sparse"),
    ("r * r", lambda e: e.r * e.r, "row_sparse"),
    ("c + d", lambda e: e.c + e.d, "default"),
    ("d + c", lambda e: e.d + e.c, "default"),
    ("c * d", lambda e: e.c * e.d, "csr"),
    ("d * c", lambda e: e.d * e.c, "default"),
    ("r * d", lambda e: e.r * e.d, "row_sparse"),
    ("d * r", lambda e: e.d * e.r, "default"),
    ("r + d", lambda e: e.r + e.d, "default"),
    ("c * 2", lambda e: e.c * 2, "csr"),
    ("c + 1", lambda e: e.c + 1, "default"),
    ("r * 2", lambda e: e.r * 2, "row_sparse"),
    ("r + 1", lambda e: e.r + 1, "default"),
    ("c / 2", lambda e: e.c / 2, "csr"),
    ("r / 2", lambda e: e.r / 2, "row_sparse"),
    ("c + r", lambda e: e.c + e.r, "default"),
    ("-c", lambda e: -e.c, "csr"),
    ("-r", lambda e: -e.r, "row_sparse"),
    ("2 * c", lambda e: 2 * e.c, "csr"),
]


@pytest.mark.parametrize("expression,compute,stype", STORAGE, ids=[s[0] for s in STORAGE])
def test_elementwise_values_and_storage(expression, compute, stype):
    x, y = _pair()
    arrays = SimpleNamespace(c=nd.array(x).tostype("csr"),
                             r=nd.array(x).tostype("row_sparse"), d=nd.array(y))
    with warnings.catch_warnings():
        warnings.simplefilter("error", KilnPerformanceWarning)     # none of these densify
        out = compute(arrays)
    assert out.stype == stype
    expected = compute(SimpleNamespace(c=x, r=x, d=y))
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-6)
    assert out.dtype == np.float32


def test_row_sparse_sum_stores_the_union_and_product_the_intersection():
    a = nd.sparse.row_sparse_array(([[1, 1], [2, 2]], [0, 3]), shape=(5, 2))
    b = nd.sparse.row_sparse_array(([[5, 5], [7, 7]], [3, 4]), shape=(5, 2))
    np.testing.assert_array_equal((a + b).indices.asnumpy(), [0, 3, 4])
    np.testing.assert_array_equal((a - b).asnumpy(), a.asnumpy() - b.asnumpy())
    np.testing.assert_array_equal((a * b).indices.asnumpy(), [3])
    np.testing.assert_array_equal((a * b).asnumpy(), a.asnumpy() * b.asnumpy())


def test_named_elementwise_functions_keep_storage():
    x, y = _pair()
    c, c2 = nd.array(x).tostype("csr"), nd.array(y).tostype("csr")
    for fn, ref in ((nd.elemwise_add, np.add), (nd.elemwise_sub, np.subtract),
                    (nd.elemwise_mul, np.multiply), (nd.sparse.add, np.add),
                    (nd.sparse.multiply, np.multiply)):
        out = fn(c, c2)
        assert out.stype == "csr"
        np.testing.assert_allclose(out.asnumpy(), ref(x, y), rtol=1e-6)
    dense = nd.sparse.add(nd.array(x), nd.array(y))      # no sparse operand: kiln's add
    assert dense.stype == "default"
    with pytest.raises(KilnError, match="equal shapes"):
        c + nd.sparse.zeros("csr", (2, 2))


def _dot_cases():
    np.random.seed(1)
    csr, _ = rand_sparse_ndarray((7, 5), "csr", density=0.3)
    lhs_t = np.random.rand(7, 3).astype(np.float32)       # for csrᵀ·dense
    rhs = np.random.rand(5, 3).astype(np.float32)         # for csr·dense
    left = np.random.rand(4, 7).astype(np.float32)        # for dense·csr
    return csr, csr.asnumpy(), lhs_t, rhs, left


def test_dot_with_csr_operands_matches_numpy_with_mxnets_storage():
    csr, a, lhs_t, rhs, left = _dot_cases()
    cases = [
        (nd.dot(csr, nd.array(rhs)), a @ rhs, "default"),
        (nd.sparse.dot(csr, nd.array(rhs)), a @ rhs, "default"),
        (nd.dot(csr, nd.array(rhs.T), transpose_b=True), a @ rhs, "default"),
        (nd.dot(csr, nd.array(lhs_t), transpose_a=True), a.T @ lhs_t, "row_sparse"),
        (nd.dot(nd.array(left), csr), left @ a, "csr"),
        (nd.dot(nd.array(rhs.T), csr, transpose_b=True), rhs.T @ a.T, "csr"),
        (nd.dot(csr, nd.array(lhs_t).tostype("row_sparse"), transpose_a=True), a.T @ lhs_t,
         "row_sparse"),
    ]
    for out, expected, stype in cases:
        assert out.stype == stype
        np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5, atol=1e-6)


def test_transposed_csr_dot_stores_the_rows_of_present_columns():
    csr = nd.sparse.csr_matrix(([1, 2], [1, 3], [0, 1, 2]), shape=(2, 5))
    out = nd.dot(csr, nd.ones((2, 4)), transpose_a=True)
    np.testing.assert_array_equal(out.indices.asnumpy(), [1, 3])


def test_row_sparse_dot_dense():
    np.random.seed(2)
    rsp, _ = rand_sparse_ndarray((6, 4), "row_sparse", density=0.5)
    w = np.random.rand(4, 3).astype(np.float32)
    out = nd.dot(rsp, nd.array(w))
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), rsp.asnumpy() @ w, rtol=1e-5)


def test_dot_shape_mismatch_is_refused():
    csr = nd.sparse.zeros("csr", (3, 4))
    with pytest.raises(KilnError, match="inner dimensions"):
        nd.dot(csr, nd.ones((3, 2)))


def test_dense_dot_is_unchanged():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(nd.dot(nd.array(x), nd.array(x.T)).asnumpy(), x @ x.T)


def _fallback_warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [w for w in caught if issubclass(w.category, KilnPerformanceWarning)]


def test_functions_without_sparse_support_run_dense_and_warn_once():
    x, _ = _pair(seed=3)
    csr = nd.array(x).tostype("csr")
    out, caught = _fallback_warnings(lambda: nd.exp(csr))
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), np.exp(x), rtol=1e-6)
    assert len(caught) == 1 and "nd.exp" in str(caught[0].message)
    _, again = _fallback_warnings(lambda: nd.exp(csr))
    assert again == []                                     # once per function and storage
    out, caught = _fallback_warnings(lambda: nd.sparse.sqrt(csr))
    np.testing.assert_allclose(out.asnumpy(), np.sqrt(x), rtol=1e-6)
    out, caught = _fallback_warnings(lambda: csr.sum(axis=0))
    np.testing.assert_allclose(out.asnumpy(), x.sum(axis=0), rtol=1e-6)
    assert len(caught) == 1 and "CSRNDArray.sum" in str(caught[0].message)
    out, _ = _fallback_warnings(lambda: nd.dot(csr, csr, transpose_b=True))
    np.testing.assert_allclose(out.asnumpy(), x @ x.T, rtol=1e-5)


def _ones_rows():
    return nd.sparse.row_sparse_array((np.ones((2, 3), "float32"), np.array([0, 2])),
                                      shape=(4, 3))


@pytest.mark.parametrize("expression, compute, stype", [
    ("y > 0", lambda y: y > 0, "row_sparse"), ("y >= 0", lambda y: y >= 0, "default"),
    ("1 == y", lambda y: 1 == y, "row_sparse"), ("0 == y", lambda y: 0 == y, "default"),
    ("0 != y", lambda y: 0 != y, "row_sparse"), ("y < 1", lambda y: y < 1, "default"),
    ("y ** 2", lambda y: y ** 2, "row_sparse"), ("2 ** y", lambda y: 2 ** y, "default"),
    ("y == y", lambda y: y == y, "default")])
def test_scalar_ops_stay_sparse_when_zeros_stay_zero(expression, compute, stype):
    y = _ones_rows()
    dense = y.asnumpy()
    z = compute(y)
    assert z.stype == stype, expression
    assert np.array_equal(z.asnumpy(), compute(dense).astype(np.float32)), expression


def test_broadcasting_a_sparse_operand_runs_dense():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KilnPerformanceWarning)
        out = _ones_rows().tostype("csr") + nd.ones((1, 3))
    assert out.stype == "default" and out.asnumpy().tolist()[1] == [1.0, 1.0, 1.0]


def test_sparse_out_and_copyto_keep_the_targets_storage():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KilnPerformanceWarning)
        out = nd.zeros((3, 3), stype="csr")
        nd.broadcast_add(nd.ones((3, 3)), nd.ones((3, 3)) * 2, out=out)
    assert out.stype == "csr" and out.asnumpy().sum() == 27.0
    drawn = nd.zeros((3, 3), stype="row_sparse")
    nd.random.uniform(shape=(3, 3), out=drawn)
    assert drawn.stype == "row_sparse" and (drawn.asnumpy() > 0).all()
    target = nd.zeros((2, 2), stype="csr")
    assert nd.array([[1, 0], [0, 2]]).copyto(target) is target
    assert target.stype == "csr" and target.asnumpy().tolist() == [[1, 0], [0, 2]]


def test_sym_sparse_names_are_the_symbol_functions():
    from kiln import sym
    assert sym.sparse.dot is sym.dot and sym.sparse.Embedding is sym.Embedding


def test_bound_symbols_write_gradients_into_sparse_arrays():
    from kiln import sym
    a, b = sym.Variable("a"), sym.Variable("b")
    out = sym.sparse.add_n(a, b)
    np.random.seed(3)
    args = [rand_sparse_ndarray((3, 4), "csr", density=0.5)[0],
            rand_sparse_ndarray((3, 4), "row_sparse", density=0.5)[0]]
    grads = [nd.sparse.zeros("csr", (3, 4)), nd.sparse.zeros("row_sparse", (3, 4))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KilnPerformanceWarning)
        ex = out.bind(kiln_cpu(), args=args, args_grad=grads)
        ex.forward(is_train=True)
        head = np.random.uniform(-1, 1, (3, 4)).astype("float32")
        ex.backward([nd.array(head)])
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), args[0].asnumpy() + args[1].asnumpy())
    for g, stype in zip(grads, ("csr", "row_sparse")):
        assert g.stype == stype
        np.testing.assert_allclose(g.asnumpy(), head, rtol=1e-6)


def kiln_cpu():
    import kiln
    return kiln.cpu()


@pytest.mark.parametrize("name, stays_sparse", [("sqrt", True), ("abs", True), ("relu", True),
                                                ("sin", True), ("exp", False), ("cos", False)])
def test_unary_functions_keep_storage_when_zero_stays_zero(name, stays_sparse):
    np.random.seed(4)
    for stype in ("csr", "row_sparse"):
        x, _ = rand_sparse_ndarray((3, 4), stype, density=0.5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", KilnPerformanceWarning)
            y = getattr(nd, name)(x)
        assert y.stype == (stype if stays_sparse else "default"), (name, stype)
        np.testing.assert_allclose(y.asnumpy(), getattr(np, name if name != "relu" else "abs")(
            x.asnumpy()) if name != "relu" else np.maximum(x.asnumpy(), 0), rtol=1e-6)


def test_contrib_elementwise_functions_keep_storage_when_zeros_stay_zero():
    # real MXNet 1.9.1: quadratic(csr, c=0) is csr with these values, with c=1 it is dense;
    # row_sparse has no quadratic kernel there, so it is dense too
    x = nd.array([[0, 2, 0], [1, 0, 0]]).tostype("csr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KilnPerformanceWarning)
        out = nd.contrib.quadratic(x, a=1.0, b=2.0, c=0.0)
        assert out.stype == "csr" and out.asnumpy().tolist() == [[0, 8, 0], [3, 0, 0]]
        assert nd.contrib.quadratic(x, a=1.0, b=2.0, c=1.0).stype == "default"
        rows = nd.array([[0, 2, 0], [1, 0, 0]]).tostype("row_sparse")
        assert nd.contrib.quadratic(rows, a=1.0, b=2.0, c=0.0).stype == "default"


def test_slicing_a_csr_array_keeps_csr():
    # real MXNet 1.9.1: crop/slice of a csr array is csr; an int begin/end is the first axis
    x = nd.arange(15).reshape((5, 3))
    rows = nd.crop(x.tostype("csr"), begin=2, end=4)
    assert rows.stype == "csr" and rows.asnumpy().tolist() == [[6, 7, 8], [9, 10, 11]]
    block = nd.slice(x.tostype("csr"), begin=(1, 1), end=(3, None))
    assert block.stype == "csr" and block.asnumpy().tolist() == [[4, 5], [7, 8]]
    assert nd.slice(x, begin=1, end=3).asnumpy().tolist() == [[3, 4, 5], [6, 7, 8]]


def test_taking_rows_of_a_csr_array_keeps_csr_in_clip_and_wrap_modes():
    # real MXNet 1.9.1: csr for 'clip' and 'wrap' on axis 0; 'raise' and axis 1 are dense
    x = nd.array([[0, 1], [2, 0], [0, 0]]).tostype("csr")
    idx = nd.array([2, 0, -1, 7])
    clipped = nd.take(x, idx, mode="clip")
    assert clipped.stype == "csr"
    assert clipped.asnumpy().tolist() == [[0, 0], [0, 1], [0, 1], [0, 0]]
    assert nd.take(x, idx, mode="wrap").asnumpy().tolist() == [[0, 0], [0, 1], [0, 0], [2, 0]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KilnPerformanceWarning)
        assert nd.take(x, nd.array([1]), mode="raise").stype == "default"
        assert nd.take(x, nd.array([1]), axis=1).stype == "default"


@pytest.mark.parametrize("axis, keepdims, stype, expected", [
    (0, False, "default", [1, 4]), (0, True, "default", [[1, 4]]),
    (1, False, "default", [0, 5, 0]), (1, True, "row_sparse", [[0], [5], [0]])])
def test_square_sum_of_row_sparse(axis, keepdims, stype, expected):
    # real MXNet 1.9.1: row_sparse only along axis 1 with keepdims
    rows = nd.array([[0, 0], [1, 2], [0, 0]]).tostype("row_sparse")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KilnPerformanceWarning)
        out = nd._internal._square_sum(rows, axis=axis, keepdims=keepdims)
    assert out.stype == stype and out.asnumpy().tolist() == expected
    assert nd._internal._square_sum(nd.ones((2, 3)), axis=1).asnumpy().tolist() == [3, 3]
