"""gluon.data: datasets, samplers, batchify, DataLoader (in-process, threads and processes)."""
import sys

import numpy as onp
import pytest

import kiln
from kiln import np
from kiln.base import KilnError
from kiln.gluon import data as gdata
from kiln.ndarray import ndarray


def _toy(n=10):
    x = onp.arange(n * 3, dtype="f4").reshape(n, 3)
    y = onp.arange(n, dtype="i4")
    return x, y


def test_array_dataset_indexes_all_arrays_and_checks_lengths():
    x, y = _toy()
    ds = gdata.ArrayDataset(np.array(x), y, list(range(10)))
    a, b, c = ds[4]
    assert isinstance(a, ndarray) and a.shape == (3,)
    assert b == 4 and c == 4 and len(ds) == 10
    with pytest.raises(KilnError, match="same length"):
        gdata.ArrayDataset(x, y[:5])


def test_transform_and_transform_first_are_lazy():
    calls = []

    def double(v):
        calls.append(1)
        return v * 2

    x, y = _toy()
    ds = gdata.ArrayDataset(x, y).transform_first(double)
    assert not calls
    d, label = ds[3]
    onp.testing.assert_array_equal(d, x[3] * 2)
    assert label == 3 and len(calls) == 1
    eager = gdata.SimpleDataset([1, 2, 3]).transform(lambda v: v + 1, lazy=False)
    assert [eager[i] for i in range(3)] == [2, 3, 4]


def test_dataset_helpers_shard_take_filter():
    ds = gdata.SimpleDataset(list(range(10)))
    assert [ds.shard(3, i)[j] for i in range(3) for j in range(len(ds.shard(3, i)))] == \
        list(range(10))
    assert len(ds.shard(3, 0)) == 4 and len(ds.take(3)) == 3
    assert list(ds.filter(lambda v: v % 2)[i] for i in range(5)) == [1, 3, 5, 7, 9]


@pytest.mark.parametrize("last_batch,sizes", [("keep", [4, 4, 2]), ("discard", [4, 4])])
def test_last_batch_keep_and_discard(last_batch, sizes):
    x, y = _toy()
    loader = gdata.DataLoader(gdata.ArrayDataset(x, y), batch_size=4, last_batch=last_batch)
    got = [b[0].shape[0] for b in loader]
    assert got == sizes and len(loader) == len(sizes)


def test_last_batch_rollover_carries_samples_into_next_epoch():
    sampler = gdata.BatchSampler(gdata.SequentialSampler(10), 4, "rollover")
    assert list(sampler) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert len(sampler) == 3  # 2 left over + 10 new
    assert list(sampler)[0] == [8, 9, 0, 1]


def test_batches_are_kiln_arrays_with_sample_dtypes():
    x, y = _toy()
    batch_x, batch_y = next(iter(gdata.DataLoader(gdata.ArrayDataset(np.array(x), y), 4)))
    assert isinstance(batch_x, ndarray) and isinstance(batch_y, ndarray)
    assert batch_x.dtype == onp.float32 and batch_y.dtype == onp.int32
    onp.testing.assert_array_equal(batch_x.asnumpy(), x[:4])


def test_shuffle_is_a_permutation_and_seeded():
    x, y = _toy(20)
    ds = gdata.ArrayDataset(x, y)

    def epoch():
        return onp.concatenate([b[1].asnumpy() for b in gdata.DataLoader(ds, 6, shuffle=True)])

    np.random.seed(7)
    first = epoch()
    np.random.seed(7)
    again = epoch()
    assert sorted(first.tolist()) == list(range(20))
    assert first.tolist() != list(range(20))
    onp.testing.assert_array_equal(first, again)


def test_sampler_and_shuffle_conflict():
    with pytest.raises(KilnError, match="shuffle"):
        gdata.DataLoader(gdata.SimpleDataset([1]), 1, shuffle=True,
                         sampler=gdata.SequentialSampler(1))
    with pytest.raises(KilnError, match="batch_sampler"):
        gdata.DataLoader(gdata.SimpleDataset([1]), 1,
                         batch_sampler=gdata.BatchSampler(gdata.SequentialSampler(1), 1))


def _scale_first(d, label):
    return d * 10, label


@pytest.mark.parametrize("thread_pool", [False, True])
def test_workers_give_the_same_batches_as_the_main_process(thread_pool):
    x, y = _toy(23)
    # the transform runs kiln ops in the worker; its kiln results must come back unpickled
    ds = gdata.ArrayDataset(np.array(x), y).transform(_scale_first)
    ref = [tuple(a.asnumpy() for a in b) for b in gdata.DataLoader(ds, 5)]
    with gdata.DataLoader(ds, 5, num_workers=2, thread_pool=thread_pool) as loader:
        for _ in range(2):  # the pool is reused across epochs
            got = list(loader)
            assert len(got) == len(ref)
            for (gx, gy), (rx, ry) in zip(got, ref):
                assert isinstance(gx, ndarray) and isinstance(gy, ndarray)
                onp.testing.assert_array_equal(gx.asnumpy(), rx)
                onp.testing.assert_array_equal(gy.asnumpy(), ry)


def test_worker_processes_are_cleaned_up():
    x, y = _toy(8)
    loader = gdata.DataLoader(gdata.ArrayDataset(x, y), 2, num_workers=2)
    list(loader)
    procs = list(loader._pool._pool)
    assert len(procs) == 2 and all(p.is_alive() for p in procs)
    loader.close()
    for p in procs:
        p.join(5)
        assert not p.is_alive()
    # garbage collection of the loader also terminates the workers
    loader = gdata.DataLoader(gdata.ArrayDataset(x, y), 2, num_workers=1)
    list(loader)
    procs = list(loader._pool._pool)
    del loader
    for p in procs:
        p.join(5)
        assert not p.is_alive()


def _failing(d, label):
    raise ValueError("bad sample")


def test_worker_errors_reach_the_main_process():
    x, y = _toy(4)
    ds = gdata.ArrayDataset(x, y).transform(_failing)
    with gdata.DataLoader(ds, 2, num_workers=1) as loader:
        with pytest.raises(ValueError, match="bad sample"):
            list(loader)


def test_custom_batchify_and_pad():
    ds = gdata.SimpleDataset([onp.ones(2, "f4"), onp.ones(4, "f4")])
    batch = next(iter(gdata.DataLoader(ds, 2, batchify_fn=gdata.batchify.Pad(val=-1),
                                       num_workers=1)))
    onp.testing.assert_array_equal(batch.asnumpy(), [[1, 1, -1, -1], [1, 1, 1, 1]])
    with pytest.raises(KilnError, match="different shapes"):
        next(iter(gdata.DataLoader(ds, 2)))


def test_digits_dataset():
    pytest.importorskip("sklearn")
    train, test = gdata.Digits(train=True), gdata.Digits(train=False)
    assert len(train) + len(test) == 1797 and 350 <= len(test) <= 370
    x, label = train[0]
    assert x.shape == (64,) and x.dtype == onp.float32
    xs, ys = kiln.data.digits.load_arrays(train=True)
    assert xs.min() == 0.0 and xs.max() == 1.0 and ys.dtype == onp.int32
    assert set(ys.tolist()) == set(range(10))
    xs2, ys2 = kiln.data.digits.load_arrays(train=True)
    onp.testing.assert_array_equal(xs, xs2)  # the split is deterministic
    from sklearn.datasets import load_digits
    tr, te = kiln.data.digits.split_indices(load_digits().target)
    assert not set(tr.tolist()) & set(te.tolist())
    assert gdata.Digits(flatten=False)[0][0].shape == (1, 8, 8)
    assert gdata.vision.datasets.Digits is gdata.Digits


def test_digits_without_sklearn_says_how_to_install(monkeypatch):
    import kiln.data.digits  # noqa: F401
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(KilnError, match=r"pip install 'kiln\[data\]'"):
        gdata.Digits()


def test_dataloader_takes_mxnets_auto_reload():
    dataset = gdata.ArrayDataset(onp.arange(6, dtype="float32"))
    for auto_reload in (True, False):
        loader = gdata.DataLoader(dataset, batch_size=2, num_workers=2, thread_pool=True,
                                  auto_reload=auto_reload)
        for _ in range(2):      # two epochs, the same batches
            assert [b.asnumpy().tolist() for b in loader] == [[0, 1], [2, 3], [4, 5]]


def test_pin_memory_batches_report_cpu_pinned():
    # MXNet 1.9.1 (test_gluon_data.py's test_dataloader_context): cpu(0) without pinning,
    # cpu_pinned(pin_device_id) with it
    from kiln.gluon.data import ArrayDataset, DataLoader
    data = ArrayDataset(onp.random.uniform(size=(10, 20)))
    assert {b.context for b in DataLoader(data, 8)} == {kiln.cpu(0)}
    pinned = list(DataLoader(data, 8, pin_memory=True))
    assert {b.context for b in pinned} == {kiln.cpu_pinned(0)} and pinned[0].shape == (8, 20)
    pairs = ArrayDataset(onp.ones((4, 2)), onp.ones(4))
    for x, y in DataLoader(pairs, 2, pin_memory=True, pin_device_id=1):
        assert x.context == y.context == kiln.cpu_pinned(1)
