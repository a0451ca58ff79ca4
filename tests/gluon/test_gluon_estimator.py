"""gluon.contrib.estimator: Estimator.fit equals the hand-written training loop, and the
event handlers (stopping, metrics, validation, logging, checkpoints, early stopping)."""
import os

import numpy as onp
import pytest

import kiln
from kiln import autograd
from kiln import gluon, np
from kiln.base import KilnError
from kiln.gluon.contrib.estimator import (Estimator, BatchEnd, EpochEnd, CheckpointHandler,
                                          EarlyStoppingHandler, LoggingHandler)
from paths import FIXTURES

RNG = onp.random.RandomState(0)
X = RNG.rand(24, 5).astype(onp.float32)
Y = (X.sum(1) > 2.5).astype(onp.float32)


def loader(shuffle=False):
    return gluon.data.DataLoader(gluon.data.ArrayDataset(X, Y), batch_size=8, shuffle=shuffle)


def make(seed=1, units=2):
    net = gluon.nn.Dense(units, in_units=5)
    net.initialize(kiln.init.Uniform(0.5))
    w = onp.random.RandomState(seed).rand(units, 5).astype(onp.float32) - 0.5
    net.weight.set_data(np.array(w))
    return net


def test_fit_equals_the_hand_written_loop():
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    net = make()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    est = Estimator(net, loss, trainer=trainer)
    est.logger.disabled = True
    est.fit(loader(), val_data=loader(), epochs=2)
    ref = make()
    ref_trainer = gluon.Trainer(ref.collect_params(), "sgd", {"learning_rate": 0.5})
    for _ in range(2):
        for x, y in loader():
            with autograd.record():
                value = loss(ref(x), y)
            value.backward()
            ref_trainer.step(x.shape[0])
    onp.testing.assert_allclose(net.weight.data().asnumpy(), ref.weight.data().asnumpy(),
                                rtol=1e-6)
    names = [m.name for m in est.train_metrics + est.val_metrics]
    assert names == ["training accuracy", "training softmaxcrossentropyloss",
                     "validation accuracy", "validation softmaxcrossentropyloss"]
    acc = (ref(np.array(X)).asnumpy().argmax(1) == Y).mean()
    assert est.val_metrics[0].get()[1] == pytest.approx(acc)


class Recorder(BatchEnd, EpochEnd):
    def __init__(self):
        self.batches = self.epochs = 0

    def batch_end(self, estimator, *args, **kwargs):
        self.batches += 1

    def epoch_end(self, estimator, *args, **kwargs):
        self.epochs += 1


def test_batches_stop_and_handlers_run(tmp_path, capsys):
    net = make()
    est = Estimator(net, gluon.loss.SoftmaxCrossEntropyLoss(),
                    trainer=gluon.Trainer(net.collect_params(), "sgd",
                                          {"learning_rate": 0.1}))
    rec = Recorder()
    ckpt = CheckpointHandler(str(tmp_path), epoch_period=None, batch_period=2,
                             max_checkpoints=1)
    est.fit(loader(), batches=4, event_handlers=[rec, ckpt,
                                                 LoggingHandler(log_interval=1,
                                                                metrics=est.train_metrics)])
    assert (rec.batches, rec.epochs) == (4, 2)      # 3 batches an epoch: stops in the 2nd
    assert sorted(os.listdir(tmp_path)) == ["model-epoch1batch3.params",
                                            "model-epoch1batch3.states"]
    out = capsys.readouterr().out
    assert "Train for 4 batches." in out and "[Epoch 0][Batch 0][Samples 8]" in out


def test_early_stopping_and_errors():
    net = make(units=1)
    est = Estimator(net, gluon.loss.L2Loss(), train_metrics=kiln.metric.MSE(),
                    trainer=gluon.Trainer(net.collect_params(), "sgd",
                                          {"learning_rate": 0.0}))
    est.logger.disabled = True
    rec = Recorder()
    # with learning rate 0 the loss never improves: patience 1 stops after the 2nd epoch
    stop = EarlyStoppingHandler(monitor=est.train_metrics[0], patience=1)
    est.fit(loader(), epochs=10, event_handlers=[rec, stop])
    assert rec.epochs == 2 and stop.mode == "min"
    with pytest.raises(KilnError, match="exactly one"):
        est.fit(loader(), epochs=1, batches=2)
    with pytest.raises(KilnError, match="DataLoader"):
        est.fit([(X, Y)], epochs=1)
    with pytest.raises(KilnError, match="train_metrics"):
        est.fit(loader(), epochs=1, event_handlers=[
            EarlyStoppingHandler(monitor=kiln.metric.MSE())])
    with pytest.raises(KilnError, match="Loss"):
        Estimator(net, "l2")


def test_log_and_metrics_equal_mxnets():
    import io
    import json
    import logging
    import re
    with open(os.path.join(FIXTURES, "mxnet_infra",
                           "estimator.json")) as f:
        want = json.load(f)
    net = gluon.nn.Dense(2, in_units=5)
    net.initialize(kiln.init.Constant(0.1))
    est = Estimator(net, gluon.loss.SoftmaxCrossEntropyLoss(),
                    trainer=gluon.Trainer(net.collect_params(), "sgd",
                                          {"learning_rate": 0.5}))
    log = io.StringIO()
    est.logger.handlers = [logging.StreamHandler(log)]
    est.fit(loader(), val_data=loader(), epochs=2)
    lines = [re.sub(r"[0-9.]+s([ ,])", r"Xs\1", line) for line in log.getvalue().splitlines()]
    assert lines == want["log"]
    for (name, value), (want_name, want_value) in zip((m.get() for m in est.val_metrics),
                                                      want["val"]):
        assert name == want_name and value == pytest.approx(want_value, rel=1e-5)
