"""MXNet 1.x Module.fit / score / predict with mx.callback, as MXNet's Module tutorial
uses them: the INFO lines, callbacks, checkpoints and resuming, metric lists."""
import logging
import os

import numpy as onp
import pytest

import kiln
from kiln import callback, mod, model
from kiln import io, sym
from kiln.gluon import metric
from kiln.base import KilnError


def _data(n=600, classes=4, seed=0):
    rng = onp.random.default_rng(seed)
    centres = rng.normal(0, 3, size=(classes, 8))
    label = rng.integers(0, classes, n)
    return (centres[label] + rng.normal(0, 1, size=(n, 8))).astype("float32"), label


def _net():
    net = sym.Variable("data")
    net = sym.FullyConnected(net, name="fc1", num_hidden=16)
    net = sym.Activation(net, name="relu1", act_type="relu")
    net = sym.FullyConnected(net, name="fc2", num_hidden=4)
    return sym.SoftmaxOutput(net, name="softmax")


def _iters(batch=32):
    x, y = _data()
    return (io.NDArrayIter(x[:500], y[:500], batch, shuffle=True),
            io.NDArrayIter(x[500:], y[500:], batch))


def test_fit_logs_as_mxnet_and_learns(caplog):
    kiln.npx.random.seed(0)
    train, val = _iters()
    m = mod.Module(_net())
    batches = []
    with caplog.at_level(logging.INFO):
        m.fit(train, eval_data=val, optimizer="sgd", optimizer_params={"learning_rate": 0.1},
              eval_metric="acc", num_epoch=3, batch_end_callback=batches.append)
    lines = [r.getMessage() for r in caplog.records]
    for epoch in range(3):
        assert any(line.startswith(f"Epoch[{epoch}] Train-accuracy=") for line in lines)
        assert any(line.startswith(f"Epoch[{epoch}] Time cost=") for line in lines)
        assert any(line.startswith(f"Epoch[{epoch}] Validation-accuracy=") for line in lines)
    assert [b.nbatch for b in batches] == list(range(16)) * 3       # 500 rows, 32 a batch
    assert isinstance(batches[0], model.BatchEndParam) and batches[-1].epoch == 2
    names_values = m.score(val, ["acc", "ce"])
    assert [n for n, _ in names_values] == ["accuracy", "cross-entropy"]
    assert names_values[0][1] > 0.9


def test_manual_loop_with_update_metric():
    train, _ = _iters()
    m = mod.Module(_net())
    m.bind(data_shapes=train.provide_data, label_shapes=train.provide_label)
    m.init_params(initializer=kiln.init.Uniform(scale=0.1))
    m.init_optimizer(optimizer="sgd", optimizer_params=(("learning_rate", 0.1),))
    acc = metric.create("acc")
    for _ in range(4):
        train.reset()
        acc.reset()
        for batch in train:
            m.forward(batch, is_train=True)
            m.update_metric(acc, batch.label)
            m.backward()
            m.update()
    assert acc.get()[1] > 0.9


def test_checkpoints_every_period_and_resume_equals_an_uninterrupted_run(tmp_path):
    prefix = os.path.join(tmp_path, "mlp")
    x, y = _data()

    def run(num_epoch, begin_epoch=0, arg_params=None, epoch_end=None):
        kiln.npx.random.seed(3)
        m = mod.Module(_net())
        m.fit(io.NDArrayIter(x, y, 50), num_epoch=num_epoch, begin_epoch=begin_epoch,
              arg_params=arg_params, epoch_end_callback=epoch_end,
              optimizer_params={"learning_rate": 0.05})
        return m.get_params()[0]

    whole = run(4, epoch_end=callback.do_checkpoint(prefix, period=2))
    assert sorted(f for f in os.listdir(tmp_path)) == ["mlp-0002.params", "mlp-0004.params",
                                                        "mlp-symbol.json"]
    symbol, args, aux = model.load_checkpoint(prefix, 2)
    assert symbol.tojson() == _net().tojson()
    resumed = run(4, begin_epoch=2, arg_params=args)
    for name in whole:          # plain SGD keeps no state, so resuming is exact
        onp.testing.assert_allclose(resumed[name].asnumpy(), whole[name].asnumpy(),
                                    rtol=1e-5, atol=1e-6)


def test_speedometer_resets_the_local_window_and_epoch_end_reports_the_global(caplog):
    train, _ = _iters(batch=25)
    m = mod.Module(_net())
    with caplog.at_level(logging.INFO):
        m.fit(train, num_epoch=1, batch_end_callback=callback.Speedometer(25, frequent=5),
              optimizer_params={"learning_rate": 0.1})
    speed = [r.getMessage() for r in caplog.records if "Speed:" in r.getMessage()]
    assert [s.split("\t")[0] for s in speed] == ["Epoch[0] Batch [0-5]", "Epoch[0] Batch [5-10]",
                                                 "Epoch[0] Batch [10-15]"]
    assert all("accuracy=" in s for s in speed)
    acc = metric.Accuracy()
    labels, preds = [kiln.np.array([0, 1])], [kiln.np.array([[0.9, 0.1], [0.8, 0.2]])]
    acc.update(labels, preds)
    acc.reset_local()
    acc.update([kiln.np.array([0])], [kiln.np.array([[0.9, 0.1]])])
    assert acc.get()[1] == 1.0 and acc.get_global()[1] == pytest.approx(2 / 3)


def test_predict_drops_padding_and_keeps_batches_apart_on_request():
    x, y = _data(n=70)
    m = mod.Module(_net())
    m.fit(io.NDArrayIter(x, y, 32), num_epoch=1)
    it = io.NDArrayIter(x, y, 32)               # 3 batches, the last padded by 26
    assert m.predict(it).shape == (70, 4)
    parts = m.predict(it, merge_batches=False)
    assert [p[0].shape[0] for p in parts] == [32, 32, 6]
    seen = [(nbatch, out[0].shape[0]) for out, nbatch, _ in m.iter_predict(it)]
    assert seen == [(0, 32), (1, 32), (2, 6)]


def test_fit_without_num_epoch_is_a_clear_error():
    train, _ = _iters()
    with pytest.raises(KilnError, match="num_epoch"):
        mod.Module(_net()).fit(train)


def test_log_train_metric_and_validation_callbacks(caplog):
    train, val = _iters()
    m = mod.Module(_net())
    with caplog.at_level(logging.INFO):
        m.fit(train, eval_data=val, num_epoch=1,
              batch_end_callback=callback.log_train_metric(8),
              eval_end_callback=callback.LogValidationMetricsCallback())
    lines = [r.getMessage() for r in caplog.records]
    assert any(line.startswith("Iter[0] Batch[8] Train-accuracy=") for line in lines)
    assert sum(line.startswith("Epoch[0] Validation-accuracy=") for line in lines) == 2


def test_fit_with_a_monitor_logs_its_statistics(caplog):
    from kiln.monitor import Monitor
    train, _ = _iters()
    m = mod.Module(_net())
    with caplog.at_level(logging.INFO):
        m.fit(train, num_epoch=1, monitor=Monitor(5, pattern=".*weight"))
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Batch:")]
    assert any("fc1_weight" in line for line in lines)
    assert any("fc2_weight" in line for line in lines)
    steps = {int(line.split()[1]) for line in lines}
    # batches 1, 6, 11, ...: MXNet counts from 1
    assert steps and all((step - 1) % 5 == 0 for step in steps)
