"""The rest of the MXNet surface d2l uses: np I/O and random, gpu contexts, scalar-slot
assignment, split_and_load, gluon.parameter / gluon.utils names."""
import os
import urllib.request

import numpy as onp
import pytest

import kiln
from kiln import autograd
from kiln import gluon, np, npx
from kiln.gluon import nn


def test_genfromtxt_loadtxt_savetxt(tmp_path):
    path = tmp_path / "airfoil.dat"
    data = onp.arange(12, dtype=onp.float64).reshape(4, 3) / 7
    onp.savetxt(path, data, delimiter="\t")
    got = np.genfromtxt(str(path), dtype=np.float32, delimiter="\t")
    assert isinstance(got, kiln.ndarray.ndarray) and got.dtype == onp.float32
    onp.testing.assert_allclose(got.asnumpy(), data, rtol=1e-6)
    np.savetxt(str(tmp_path / "out.txt"), got)
    onp.testing.assert_allclose(np.loadtxt(str(tmp_path / "out.txt")).asnumpy(), data,
                                rtol=1e-6)


def test_random_functions_d2l_calls():
    np.random.seed(0)
    counts = np.random.multinomial(1000, np.array([0.2, 0.3, 0.5]))
    assert counts.shape == (3,) and int(counts.sum()) == 1000
    assert np.random.multinomial(10, [0.5, 0.5], size=4).shape == (4, 2)
    a = np.arange(10)
    np.random.shuffle(a)
    assert sorted(a.asnumpy().tolist()) == list(range(10)) and a.asnumpy().tolist() != \
        list(range(10))
    picks = np.random.choice(5, size=(3,), replace=False)
    assert len(set(picks.asnumpy().tolist())) == 3
    assert np.random.uniform(0, 1, (2, 3)).shape == (2, 3)
    assert np.random.normal(0, 1, size=(4,)).dtype == onp.float32


def test_gpu_is_a_context_that_fails_on_use():
    ctx = npx.gpu(1)
    assert ctx.device_type == "gpu" and ctx.device_id == 1 and npx.num_gpus() == 0
    for place in (lambda: np.ones(2).as_in_context(ctx), lambda: np.zeros(2, ctx=ctx),
                  lambda: np.array([1.0], device=ctx), lambda: np.ones(2).copyto(ctx)):
        with pytest.raises(kiln.KilnError, match=r"cannot place data on gpu\(1\).*CPU only"):
            place()
    net = nn.Dense(2)
    with pytest.raises(kiln.KilnError, match="cannot place data on gpu"):
        net.initialize(ctx=ctx)


def test_one_element_array_fills_a_scalar_slot():
    preds = np.zeros(3)
    preds[1] = np.full((1, 1), 4.0)
    assert preds.asnumpy().tolist() == [0.0, 4.0, 0.0]
    with pytest.raises(kiln.KilnError, match="setitem"):
        preds[0] = np.ones(2)
    # recorded: the gradient flows through the slot
    w = np.ones((1, 1))
    w.attach_grad()
    with autograd.record():
        z = np.zeros(3)
        z[2] = w * 2
        loss = (z * 3).sum()
    loss.backward()
    assert float(w.grad.item()) == 6.0

    def fill(x):
        out = np.zeros(3)
        out[0] = x.sum(axis=1, keepdims=True)
        return out * 2
    x = np.array([[1.0, 2.0]])
    compiled = kiln.hybridize(fill)
    onp.testing.assert_allclose(compiled(x).asnumpy(), fill(x).asnumpy())
    onp.testing.assert_allclose(compiled(x).asnumpy(), [6.0, 0.0, 0.0])


def test_split_and_load_onto_cpu_contexts():
    x = np.arange(12).reshape(6, 2)
    parts = gluon.utils.split_and_load(x, [npx.cpu(0), npx.cpu(1), npx.cpu(2)])
    assert [p.shape for p in parts] == [(2, 2)] * 3
    onp.testing.assert_array_equal(onp.concatenate([p.asnumpy() for p in parts]),
                                   x.asnumpy())
    uneven = gluon.utils.split_and_load(np.arange(5), [npx.cpu(0), npx.cpu(1)],
                                        even_split=False)
    assert [p.shape for p in uneven] == [(3,), (2,)]      # MXNet 1.9.1 gives these shapes
    with pytest.raises(kiln.KilnError, match="cannot place data on gpu"):
        gluon.utils.split_and_load(x, [npx.gpu(0)])
    with pytest.raises(kiln.KilnError, match="ctx_list is empty"):
        gluon.utils.split_and_load(x, [])
    with pytest.raises(kiln.KilnError, match="cannot split a batch of 6 into 7"):
        gluon.utils.split_data(x, 7)


def test_clip_global_norm_matches_numpy():
    rs = onp.random.RandomState(0)
    arrays = [rs.randn(3, 4).astype(onp.float32), rs.randn(5).astype(onp.float32)]
    total = onp.sqrt(sum((a.astype(onp.float64) ** 2).sum() for a in arrays))
    ks = [np.array(a) for a in arrays]
    norm = gluon.utils.clip_global_norm(ks, 1.0)
    assert norm == pytest.approx(total, rel=1e-6)
    for k, a in zip(ks, arrays):
        onp.testing.assert_allclose(k.asnumpy(), a / total, rtol=1e-5)
    small = [np.array([0.1, 0.2])]
    gluon.utils.clip_global_norm(small, 10.0)
    onp.testing.assert_allclose(small[0].asnumpy(), [0.1, 0.2])


def test_gluon_parameter_and_utils_public_names():
    from kiln.gluon.parameter import (Constant, DeferredInitializationError, Parameter,
                                      ParameterDict, tensor_types)
    assert ParameterDict is gluon.ParameterDict and isinstance(np.ones(1), tensor_types)
    assert Parameter and Constant and DeferredInitializationError
    for name in ("split_data", "split_and_load", "clip_global_norm", "check_sha1",
                 "download", "replace_file", "shape_is_known"):
        assert callable(getattr(gluon.utils, name))


def test_download_checks_hashes_and_reports_offline(tmp_path, monkeypatch):
    path = tmp_path / "f.bin"
    path.write_bytes(b"abc")
    digest = "a9993e364706816aba3e25717850c26c9cd0d89d"  # SHA-1 of b"abc"
    assert gluon.utils.check_sha1(str(path), digest)
    assert gluon.utils.download("http://x/f.bin", path=str(path), sha1_hash=digest) == \
        str(path)

    def refuse(*args, **kwargs):
        raise urllib.error.URLError("offline")
    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    with pytest.raises(kiln.KilnError, match="could not fetch http://x/f.bin"):
        gluon.utils.download("http://x/f.bin", path=str(path), sha1_hash="0" * 40)
    assert path.read_bytes() == b"abc"  # the old file is left as it was
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".kiln-download")]


@pytest.mark.parametrize("hybridize", [False, True])
def test_trainer_over_several_cpu_contexts_equals_one_device(hybridize):
    """d2l's multi-device loop: shards through one net, backward per shard, one step."""
    rs = onp.random.RandomState(0)
    X, y = rs.randn(8, 5).astype(onp.float32), rs.randint(0, 3, 8)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def make(ctx):
        net = nn.HybridSequential()
        net.add(nn.Dense(4, activation="relu"), nn.Dense(3))
        net.initialize(kiln.init.Normal(0.5), ctx=ctx)
        if hybridize:
            net.hybridize()
        return net, gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})

    def weights(net):
        return [p.data().asnumpy() for p in net.collect_params().values()]

    net1, tr1 = make(npx.cpu())
    net1(np.array(X))
    net2, tr2 = make([npx.cpu(0), npx.cpu(1)])
    net2(np.array(X))
    for p1, p2 in zip(net1.collect_params().values(), net2.collect_params().values()):
        p2.set_data(p1.data())
    assert net2.collect_params()["0.weight"].list_ctx() == [npx.cpu(0), npx.cpu(1)]
    for _ in range(3):
        with autograd.record():
            loss = loss_fn(net1(np.array(X)), np.array(y))
        loss.backward()
        tr1.step(8)
        xs = gluon.utils.split_and_load(np.array(X), [npx.cpu(0), npx.cpu(1)])
        ys = gluon.utils.split_and_load(np.array(y), [npx.cpu(0), npx.cpu(1)])
        with autograd.record():
            losses = [loss_fn(net2(a), b) for a, b in zip(xs, ys)]
        for one in losses:
            one.backward()
        tr2.step(8)
    for w1, w2 in zip(weights(net1), weights(net2)):
        onp.testing.assert_allclose(w2, w1, rtol=1e-5, atol=1e-6)


def test_reinitializing_on_one_context_restores_plain_gradients():
    """d2l's multi-GPU chapter re-initializes one net with force_reinit on 1, then 2
    devices; each time the gradient mode must follow the new context list."""
    net = nn.Dense(2, in_units=3)
    net.initialize(ctx=[npx.cpu(0), npx.cpu(1)])
    net.initialize(ctx=npx.cpu(), force_reinit=True)
    x = np.ones((1, 3))
    for _ in range(2):
        with autograd.record():
            y = net(x).sum()
        y.backward()
    onp.testing.assert_allclose(net.weight.grad().asnumpy(), onp.ones((2, 3)))  # not 2s
    net.initialize(ctx=[npx.cpu(0), npx.cpu(1)], force_reinit=True)
    for _ in range(2):
        with autograd.record():
            y = net(x).sum()
        y.backward()
    onp.testing.assert_allclose(net.weight.grad().asnumpy(), 2 * onp.ones((2, 3)))
