"""NDArrayIter, ResizeIter, PrefetchingIter and DataIter subclasses against MXNet 1.9.1's
batches (tests/fixtures/io/make_io_fixture.py recorded them)."""
import numpy as np
import pytest

import kiln
from kiln import io as kio

from io_fixture import (expected_batches, kiln_batches, ndarray_case_names,
                        ndarray_inputs)


@pytest.mark.parametrize("name", ndarray_case_names())
def test_ndarrayiter_batches_match_mxnet_over_three_epochs(name):
    want, extra = expected_batches("ndarray/" + name)
    np.random.seed(extra["seed"])  # MXNet shuffles with NumPy's global generator
    data, label = ndarray_inputs()
    it = kio.NDArrayIter(data, label, **extra["kwargs"])
    assert [[d.name, list(d.shape)] for d in it.provide_data] == extra["provide_data"]
    assert [[d.name, list(d.shape)] for d in it.provide_label] == extra["provide_label"]
    got = kiln_batches(it, 3)
    assert len(got) == len(want)
    for (gd, gl, gpad, gidx), (wd, wl, wpad, widx) in zip(got, want):
        assert gpad == wpad and gidx is None and widx is None
        assert len(gd) == len(wd) == 2 and len(gl) == len(wl) == 2
        assert [a.dtype for a in gd + gl] == [np.float32] * len(gd + gl)
        for g, w in zip(gd + gl, wd + wl):
            np.testing.assert_array_equal(g, w)


def test_ndarrayiter_keeps_a_kiln_arrays_dtype_and_names_a_list():
    it = kio.NDArrayIter([kiln.nd.array(np.arange(4), dtype="int32"), np.ones((4, 2))],
                         batch_size=2)
    assert [d.name for d in it.provide_data] == ["_0_data", "_1_data"]
    b = it.next()
    assert b.data[0].dtype == np.int32 and b.data[1].dtype == np.float32


def test_ndarrayiter_iter_next_getpad_and_hard_reset():
    it = kio.NDArrayIter(np.arange(5.0), batch_size=2, last_batch_handle="roll_over")
    firsts = []
    while it.iter_next():
        firsts.append(float(it.getdata()[0].asnumpy()[0]))
    assert firsts == [0.0, 2.0, 4.0]  # iter_next/getdata see the short last batch
    it.reset()
    assert len(list(it)) == 2  # next() keeps the short batch back ...
    it.reset()                 # ... and rolls it into the next epoch
    b = it.next()
    assert b.data[0].asnumpy().tolist() == [4.0, 0.0] and it.getpad() == 1
    it2 = kio.NDArrayIter(np.arange(5.0), batch_size=2, last_batch_handle="roll_over")
    list(it2)
    it2.hard_reset()      # drops it
    assert it2.next().data[0].asnumpy().tolist() == [0.0, 1.0]


def test_ndarrayiter_layout_puts_the_batch_on_axis_n():
    x = np.arange(2 * 5, dtype=np.float32).reshape(2, 5)
    it = kio.NDArrayIter(x, batch_size=2, layout="TN", last_batch_handle="discard")
    assert it.provide_data[0].shape == (2, 2)
    assert [b.data[0].asnumpy()[0].tolist() for b in it] == [[0, 1], [2, 3]]


@pytest.mark.parametrize("bad, match", [
    (dict(data=np.ones((4, 2)), label=np.ones(3)), "3 examples|has shape"),
    (dict(data=np.ones(4), last_batch_handle="wrap"), "last_batch_handle"),
    (dict(data=np.ones(4), batch_size=0), "batch_size"),
    (dict(data="abc"), "array"),
    (dict(data=[]), "no data"),
    (dict(data=[np.float32(3)]), "scalar"),
])
def test_ndarrayiter_bad_input_is_a_kiln_error(bad, match):
    with pytest.raises(kiln.KilnError, match=match):
        kio.NDArrayIter(**bad)


def test_a_longer_label_serves_its_first_examples():
    # MXNet 1.9.1 (run here): data of 4 examples, a label of 6, batch 2 -> labels
    # [10, 11], [12, 13]; the data's count decides, as test_loss's sample-weight test uses
    it = kio.NDArrayIter(np.arange(4.0).reshape(4, 1), {"label": np.arange(10.0, 16.0)},
                         batch_size=2)
    assert [b.label[0].asnumpy().tolist() for b in it] == [[10, 11], [12, 13]]
    padded = kio.NDArrayIter(np.arange(5.0).reshape(5, 1), {"label": np.arange(10.0, 17.0)},
                             batch_size=2)
    assert [b.label[0].asnumpy().tolist() for b in padded][-1] == [14, 10]


def test_resizeiter_restarts_the_inner_iterator():
    inner = kio.NDArrayIter(np.arange(4.0), batch_size=2)
    it = kio.ResizeIter(inner, 5)
    got = [b.data[0].asnumpy()[0] for b in it]
    assert got == [0, 2, 0, 2, 0] and it.provide_data == inner.provide_data
    it.reset()
    assert len(list(it)) == 5


def test_prefetchingiter_joins_and_renames():
    a = kio.NDArrayIter(np.arange(6.0), np.zeros(6), batch_size=4)
    b = kio.NDArrayIter(-np.arange(6.0), np.ones(6), batch_size=4)
    it = kio.PrefetchingIter([a, b], rename_data=[{"data": "x"}, {"data": "y"}])
    assert [d.name for d in it.provide_data] == ["x", "y"] and it.batch_size == 4
    batches = list(it)
    assert len(batches) == 2 and batches[1].pad == 2 and len(batches[0].data) == 2
    np.testing.assert_array_equal(batches[1].data[1].asnumpy(), [-4, -5, 0, -1])
    it.reset()
    assert len(list(it)) == 2
    short = kio.NDArrayIter(np.arange(2.0), batch_size=4)
    with pytest.raises(kiln.KilnError, match="padding"):
        list(kio.PrefetchingIter([kio.NDArrayIter(np.arange(4.0), batch_size=4), short]))


class _Countdown(kio.DataIter):
    """A DataIter written as MXNet's tutorials write them."""

    def __init__(self, n):
        super().__init__(batch_size=2)
        self.n, self.k = n, 0
        self.provide_data = [kio.DataDesc("data", (2, 1))]
        self.provide_label = []

    def reset(self):
        self.k = 0

    def iter_next(self):
        self.k += 1
        return self.k <= self.n

    def getdata(self):
        return [kiln.nd.array([[self.k], [self.k]])]

    def getlabel(self):
        return []

    def getpad(self):
        return 0


def test_a_dataiter_subclass_iterates_and_feeds_a_module():
    it = _Countdown(3)
    assert [int(b.data[0].asnumpy()[0, 0]) for b in it] == [1, 2, 3]
    it.reset()
    assert str(next(it)) == "DataBatch: data shapes: [(2, 1)] label shapes: None"


@pytest.mark.parametrize("n", [1, 4, 7])
@pytest.mark.parametrize("batch_size", [1, 3, 4, 9])
def test_ndarrayiter_epochs_cover_the_data_as_each_mode_promises(n, batch_size):
    x = np.arange(n, dtype=np.float32)
    pad = kio.NDArrayIter(x, batch_size=batch_size)
    for _ in range(2):
        rows = [b.data[0].asnumpy()[:batch_size - b.pad] for b in pad]
        assert np.concatenate(rows).tolist() == x.tolist()
        pad.reset()
    discard = kio.NDArrayIter(x, batch_size=batch_size, last_batch_handle="discard")
    assert len(list(discard)) == n // batch_size
    roll = kio.NDArrayIter(x, batch_size=batch_size, last_batch_handle="roll_over")
    seen = []
    for _ in range(3):
        seen += [v for b in roll for v in b.data[0].asnumpy().tolist()]
        roll.reset()
    # every example in turn, none dropped or repeated, across epoch boundaries
    assert seen == [float(k % n) for k in range(len(seen))]
    if batch_size <= n:
        assert len(seen) > 3 * n - batch_size


def test_csr_data_is_batched_as_csr_with_discard_only():
    # MXNet 1.9.1: a CSRNDArray or SciPy csr source needs last_batch_handle='discard'
    sp = pytest.importorskip("scipy.sparse")
    from kiln import nd
    dense = np.arange(12, dtype=np.float32).reshape(6, 2) % 3
    csr = nd.array(dense).tostype("csr")
    with pytest.raises(NotImplementedError):
        kio.NDArrayIter({"data": csr}, dense, 4)
    for source in (csr, sp.csr_matrix(dense)):
        batches = list(kio.NDArrayIter({"data": source}, None, 4, last_batch_handle="discard"))
        assert len(batches) == 1 and batches[0].data[0].stype == "csr"
        assert batches[0].data[0].asnumpy().tolist() == dense[:4].tolist()
    np.random.seed(0)
    shuffled = next(iter(kio.NDArrayIter({"a": csr, "b": dense}, None, 6, shuffle=True,
                                         last_batch_handle="discard")))
    assert shuffled.data[0].asnumpy().tolist() == shuffled.data[1].asnumpy().tolist()
