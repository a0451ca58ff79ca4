"""MXNet 1.x sparse storage (kiln/mx/nd/sparse): making CSR and row_sparse arrays, their
parts, conversions, slicing and copies, checked against SciPy and NumPy."""
import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse")

from kiln import nd  # noqa: E402
from kiln._core.base import KilnError  # noqa: E402
from kiln.mx.nd.sparse import CSRNDArray, RowSparseNDArray, rand_sparse_ndarray  # noqa: E402

DENSE = np.array([[0, 1, 0, 0], [2, 0, 3, 0], [0, 0, 0, 0], [0, 4, 0, 5]], np.float32)


def test_dense_arrays_have_default_storage_and_convert_both_ways():
    a = nd.array(DENSE)
    assert a.stype == "default" and a.tostype("default") is a
    csr, rsp = a.tostype("csr"), a.tostype("row_sparse")
    assert isinstance(csr, CSRNDArray) and csr.stype == "csr"
    assert isinstance(rsp, RowSparseNDArray) and rsp.stype == "row_sparse"
    for x in (csr, rsp):
        assert x.shape == DENSE.shape and x.dtype == np.float32
        np.testing.assert_array_equal(x.asnumpy(), DENSE)
        np.testing.assert_array_equal(x.todense().asnumpy(), DENSE)
        assert x.tostype("default").stype == "default"
    np.testing.assert_array_equal(csr.tostype("row_sparse").asnumpy(), DENSE)
    np.testing.assert_array_equal(rsp.tostype("csr").asnumpy(), DENSE)
    with pytest.raises(KilnError, match="stype"):
        a.tostype("coo")


def test_csr_parts_match_scipy():
    csr = nd.array(DENSE).tostype("csr")
    ref = sp.csr_matrix(DENSE)
    np.testing.assert_array_equal(csr.data.asnumpy(), ref.data)
    np.testing.assert_array_equal(csr.indices.asnumpy(), ref.indices)
    np.testing.assert_array_equal(csr.indptr.asnumpy(), ref.indptr)
    assert csr.indices.dtype == np.int64 and csr.indptr.dtype == np.int64
    assert (csr.asscipy() != ref).nnz == 0


def test_row_sparse_parts_are_the_nonzero_rows():
    rsp = nd.array(DENSE).tostype("row_sparse")
    np.testing.assert_array_equal(rsp.indices.asnumpy(), [0, 1, 3])
    np.testing.assert_array_equal(rsp.data.asnumpy(), DENSE[[0, 1, 3]])
    assert rsp.indices.dtype == np.int64


def test_csr_matrix_from_parts_coordinates_dense_and_scipy():
    from_parts = nd.sparse.csr_matrix(([1, 2, 3], [1, 0, 2], [0, 1, 3, 3]), shape=(3, 4))
    expected = np.array([[0, 1, 0, 0], [2, 0, 3, 0], [0, 0, 0, 0]], np.float32)
    assert from_parts.dtype == np.float32
    np.testing.assert_array_equal(from_parts.asnumpy(), expected)
    coo = nd.sparse.csr_matrix(([1, 2, 3], ([0, 1, 1], [1, 0, 2])), shape=(3, 4))
    np.testing.assert_array_equal(coo.asnumpy(), expected)
    from_numpy = nd.sparse.csr_matrix(expected.astype(np.float64))
    assert from_numpy.dtype == np.float64           # NumPy sources keep their dtype
    np.testing.assert_array_equal(from_numpy.asnumpy(), expected)
    from_scipy = nd.sparse.csr_matrix(sp.csr_matrix(expected))
    np.testing.assert_array_equal(from_scipy.asnumpy(), expected)
    assert nd.sparse.array(sp.coo_matrix(expected)).stype == "csr"
    assert nd.sparse.csr_matrix(from_parts, dtype="float64").dtype == np.float64
    with pytest.raises(KilnError, match="float16"):    # SciPy's CSR has no float16
        nd.sparse.csr_matrix(from_parts, dtype="float16")
    with pytest.raises(KilnError, match="float16"):
        nd.array(expected, dtype="float16").tostype("csr")


def test_csr_matrix_refuses_inconsistent_parts():
    with pytest.raises(KilnError, match="indptr"):
        nd.sparse.csr_matrix(([1, 2], [0, 1], [0, 1, 3]), shape=(2, 2))
    with pytest.raises(KilnError, match="column indices"):
        nd.sparse.csr_matrix(([1, 2], [0, 5], [0, 1, 2]), shape=(2, 2))
    # MXNet infers a missing shape from indptr and the largest column index; with no
    # stored values there is nothing to infer it from
    assert nd.sparse.csr_matrix(([1], [2], [0, 0, 1])).shape == (2, 3)
    with pytest.raises(KilnError, match="shape"):
        nd.sparse.csr_matrix(([], [], [0]))
    with pytest.raises(KilnError, match="2-D"):
        nd.sparse.csr_matrix(np.zeros((2, 2, 2)))


def test_row_sparse_array_sorts_rows_and_checks_them():
    rsp = nd.sparse.row_sparse_array(([[3, 3], [1, 1]], [4, 1]), shape=(5, 2))
    np.testing.assert_array_equal(rsp.indices.asnumpy(), [1, 4])
    expected = np.zeros((5, 2), np.float32)
    expected[1], expected[4] = 1, 3
    np.testing.assert_array_equal(rsp.asnumpy(), expected)
    np.testing.assert_array_equal(nd.sparse.row_sparse_array(expected).indices.asnumpy(),
                                  [1, 4])
    with pytest.raises(KilnError, match="row indices"):
        nd.sparse.row_sparse_array(([[1, 1]], [7]), shape=(5, 2))
    with pytest.raises(KilnError, match="unique"):
        nd.sparse.row_sparse_array(([[1, 1], [2, 2]], [1, 1]), shape=(5, 2))
    with pytest.raises(KilnError, match="data of shape"):
        nd.sparse.row_sparse_array(([[1, 1, 1]], [1]), shape=(5, 2))


def test_zeros_empty_and_cast_storage():
    for stype in ("csr", "row_sparse"):
        for z in (nd.sparse.zeros(stype, (3, 4)), nd.sparse.empty(stype, (3, 4)),
                  nd.zeros((3, 4), stype=stype)):
            assert z.stype == stype and z.shape == (3, 4)
            np.testing.assert_array_equal(z.asnumpy(), np.zeros((3, 4)))
            assert z.data.shape[0] == 0
    cast = nd.cast_storage(nd.array(DENSE), stype="csr")
    assert cast.stype == "csr"
    assert nd.cast_storage(cast, "default").stype == "default"
    assert nd.sparse.cast_storage(cast, "row_sparse").stype == "row_sparse"


def test_csr_row_slicing():
    csr = nd.array(DENSE).tostype("csr")
    for key in (slice(1, 3), slice(None, 2), slice(2, None), slice(-2, None)):
        part = csr[key]
        assert part.stype == "csr"
        np.testing.assert_array_equal(part.asnumpy(), DENSE[key])
    np.testing.assert_array_equal(csr[1].asnumpy(), DENSE[1:2])
    with pytest.raises(KilnError, match="step 1"):
        csr[::2]
    with pytest.raises(KilnError, match="out of range"):
        csr[4]


def test_retain_keeps_only_listed_rows():
    rsp = nd.array(DENSE).tostype("row_sparse")
    kept = rsp.retain(nd.array([0, 2, 3], dtype="int64"))
    np.testing.assert_array_equal(kept.indices.asnumpy(), [0, 3])
    expected = DENSE.copy()
    expected[1] = 0
    np.testing.assert_array_equal(kept.asnumpy(), expected)
    np.testing.assert_array_equal(nd.sparse.retain(rsp, [1]).indices.asnumpy(), [1])


def test_copies_are_independent_and_copyto_writes_targets():
    csr = nd.array(DENSE).tostype("csr")
    twin = csr.copyto(nd.cpu()) if hasattr(nd, "cpu") else csr.copy()
    assert twin.stype == "csr" and twin is not csr
    dense = nd.zeros(DENSE.shape)
    assert csr.copyto(dense) is dense
    np.testing.assert_array_equal(dense.asnumpy(), DENSE)
    target = nd.sparse.zeros("row_sparse", DENSE.shape)
    csr.copyto(target)
    assert target.stype == "row_sparse"
    np.testing.assert_array_equal(target.asnumpy(), DENSE)
    with pytest.raises(KilnError, match="shape"):
        csr.copyto(nd.sparse.zeros("csr", (2, 2)))


def test_rand_sparse_ndarray_density_and_parts():
    np.random.seed(0)
    csr, (indptr, indices, data) = rand_sparse_ndarray((50, 40), "csr", density=0.1)
    assert csr.stype == "csr" and csr.dtype == np.float32
    assert data.shape[0] == 200                    # scipy's random draws density*size values
    ref = sp.csr_matrix((data.asnumpy(), indices.asnumpy(), indptr.asnumpy()), shape=(50, 40))
    np.testing.assert_array_equal(ref.toarray(), csr.asnumpy())
    rsp, (values, rows) = rand_sparse_ndarray((30, 3), "row_sparse", density=0.5,
                                              dtype="float64")
    assert rsp.dtype == np.float64 and values.shape == (rows.size, 3)
    np.testing.assert_array_equal(rsp.asnumpy()[rows], values)
    chosen, (values, rows) = rand_sparse_ndarray((6, 2), "row_sparse", rsp_indices=[1, 4],
                                                 data_init=7)
    np.testing.assert_array_equal(chosen.indices.asnumpy(), [1, 4])
    assert np.all(values == 7)
    empty, (values, rows) = rand_sparse_ndarray((6, 2), "row_sparse", density=0.0)
    assert empty.stype == "row_sparse" and rows.size == 0
    with pytest.raises(KilnError, match="stype"):
        rand_sparse_ndarray((3, 3), "coo")


def test_missing_scipy_names_the_fix(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_scipy(name, *args, **kwargs):
        if name.startswith("scipy"):
            raise ImportError("no scipy")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_scipy)
    with pytest.raises(KilnError, match="pip install scipy"):
        nd.sparse.csr_matrix(DENSE)


def test_mxnet_1x_creation_forms_and_attributes():
    import kiln
    empty = nd.sparse.csr_matrix((2, 3), ctx=kiln.cpu(1))
    assert (empty.stype, empty.shape, empty.context) == ("csr", (2, 3), kiln.cpu(1))
    rows = nd.sparse.row_sparse_array((4, 2))
    assert rows.stype == "row_sparse" and rows.asnumpy().sum() == 0
    assert rows.context == kiln.Context.default_ctx
    inferred = nd.sparse.row_sparse_array((np.ones((2, 3)), [1, 4]))
    assert inferred.shape == (5, 3)
    assert (empty._num_aux, rows._num_aux) == (2, 1)
    empty.check_format()
    with pytest.raises(ValueError):
        nd.sparse.csr_matrix(nd.ones((2, 2)), shape=(3, 2))
    with pytest.raises(ValueError):
        nd.sparse.zeros("invalid_stype", (2, 2))
    with pytest.raises(KilnError):
        nd.sparse.retain(nd.ones((2, 2)), invalid_arg="garbage")


def test_setitem_fills_sparse_arrays_and_getnnz_counts():
    x = nd.sparse.zeros("csr", (2, 3))
    x[:] = np.ones((2, 3))
    assert x.stype == "csr" and x.asnumpy().sum() == 6
    y = nd.sparse.zeros("row_sparse", (2, 3))
    y[:] = 2
    assert y.stype == "row_sparse" and y.asnumpy().sum() == 12
    c = nd.sparse.csr_matrix(([1.0, 2.0, 3.0], [0, 2, 1], [0, 2, 2, 3]), shape=(3, 3))
    assert nd.contrib.getnnz(c).asnumpy().tolist() == [3]
    assert nd.contrib.getnnz(c, axis=1).asnumpy().tolist() == [2, 0, 1]


def test_powerlaw_rows_double_their_stored_values():
    np.random.seed(0)
    arr, _ = rand_sparse_ndarray((5, 16), "csr", density=0.5, distribution="powerlaw")
    indptr = arr.indptr.asnumpy()
    counts = np.diff(indptr)
    assert counts[2] == 2 * counts[1] and counts[3] == 2 * counts[2]


def test_created_csr_takes_the_data_arrays_dtype_and_canonical_form():
    # real MXNet 1.9.1: an array's dtype (nd or NumPy) is kept, a list gives float32;
    # nd.array of a SciPy matrix or a sparse array is a sparse copy, duplicates summed
    data = nd.array([1, 2], dtype="float64")
    parts = (nd.array([0, 1]), nd.array([0, 1, 2]))
    assert nd.sparse.csr_matrix((data,) + parts, shape=(2, 2)).dtype == np.float64
    assert nd.sparse.csr_matrix((np.array([1, 2.0]), [0, 1], [0, 1, 2]),
                                shape=(2, 2)).dtype == np.float64
    assert nd.sparse.csr_matrix(([1, 2.0], [0, 1], [0, 1, 2]), shape=(2, 2)).dtype == np.float32
    messy = sp.csr_matrix((np.array([1, 2, 3.0]), np.array([1, 0, 1]), np.array([0, 3, 3])),
                            shape=(2, 2))
    made = nd.array(messy, dtype=np.float64)
    assert made.stype == "csr" and made.dtype == np.float64
    assert made.indices.asnumpy().tolist() == [0, 1] and made.data.asnumpy().tolist() == [2, 4]
    assert nd.array(made).stype == "csr"
