"""mx.contrib: the 0.11 autograd API, DataLoaderIter feeding Module.fit, op namespaces."""
import numpy as onp

import kiln
from mx_alias_fixture import mx  # noqa: F401  (the fixture)


def test_contrib_autograd(mx):
    from mxnet.contrib import autograd as cag
    x = mx.nd.array([1.0, 2.0, 3.0])
    grads, loss = cag.grad_and_loss(lambda a: (a * a).sum())(x)
    onp.testing.assert_allclose(grads[0].asnumpy(), [2.0, 4.0, 6.0])
    assert float(loss.asnumpy()) == 14.0
    g = cag.grad(lambda a, b: (a * b).sum(), argnum=1)(x, mx.nd.ones(3) * 2)
    onp.testing.assert_allclose(g[0].asnumpy(), x.asnumpy())
    with cag.train_section():
        assert kiln.autograd.is_training() and kiln.autograd.is_recording()
    assert not kiln.autograd.is_recording()


def test_dataloader_iter_pads_and_feeds_module(mx):
    from mxnet import gluon
    from mxnet.contrib.io import DataLoaderIter
    X = onp.random.RandomState(0).rand(10, 4).astype("float32")
    Y = (X.sum(1) > 2).astype("float32")
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(X, Y), batch_size=4)
    it = DataLoaderIter(loader)
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 2]
    assert batches[-1].data[0].shape == (4, 4)
    onp.testing.assert_allclose(batches[-1].data[0].asnumpy()[:2], X[8:])
    assert it.provide_data[0].name == "data" and it.provide_data[0].shape == (4, 4)
    it.reset()
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2),
                               name="softmax")
    mod = mx.mod.Module(net)
    mod.fit(it, num_epoch=2, optimizer_params={"learning_rate": 0.1})
    assert 0.0 <= mod.score(it, "acc")[0][1] <= 1.0
    assert mx.contrib.nd.MultiBoxPrior is kiln.nd.contrib.MultiBoxPrior


def test_monitor_collects_outputs_and_weights(mx, caplog):
    import logging
    data = mx.sym.var("data")
    net = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=3, name="fc1"),
                            act_type="relu", name="relu1")
    exe = net.simple_bind(data=(2, 4))
    exe.arg_dict["fc1_weight"][:] = 0.5
    mon = mx.mon.Monitor(2, pattern=".*weight|.*output", sort=True)
    mon.install(exe)
    x = onp.random.RandomState(0).rand(2, 4).astype("float32")
    seen = []
    for _ in range(3):
        mon.tic()
        exe.forward(data=mx.nd.array(x))
        seen.append(mon.toc())
    assert [len(s) for s in seen] == [3, 0, 3]             # every 2nd batch
    names = [name for _, name, _ in seen[0]]
    assert names == ["fc1_output", "fc1_weight", "relu1_output"]
    out = exe.outputs[0].asnumpy()
    stat = float(seen[0][2][2].strip())
    assert abs(stat - onp.linalg.norm(out) / onp.sqrt(out.size)) < 1e-5
    assert float(seen[0][1][2].strip()) == 0.5
    mon.tic()
    mon.tic()                                              # batch 4: collected again
    with caplog.at_level(logging.INFO):
        mon.toc_print()
    assert "fc1_weight" in caplog.text
