"""Adamax, Nadam, Ftrl, FTML, LAMB, LARS, Signum, SGLD and DCASGD: four updates through
optimizer.get_updater equal MXNet 1.9.1's on the same inputs (tests/fixtures/mxnet_infra/
make_fixtures.py records them with real MXNet)."""
import json
import os

import numpy as np
import pytest

import kiln
from kiln import optimizer
from kiln.base import KilnError
from paths import FIXTURES

HERE = os.path.join(FIXTURES, "mxnet_infra")
FIXTURE = np.load(os.path.join(HERE, "optimizers.npz"))
with open(os.path.join(HERE, "optimizers.json")) as f:
    CASES = json.load(f)


def run(name, params, grads, weight0):
    opt = optimizer.create(name, rescale_grad=0.5, **params)
    opt.idx2name = {0: "fc_weight"}
    updater = optimizer.get_updater(opt)
    w = weight0.copy()
    steps = []
    for g in grads:
        updater(0, g.copy(), w)
        steps.append(w.copy())
    return np.stack(steps)


@pytest.mark.parametrize("case", sorted(CASES))
def test_updates_equal_mxnets(case):
    name, params = CASES[case]
    got = run(name, params, FIXTURE["grads"], FIXTURE["weight0"])
    np.testing.assert_allclose(got, FIXTURE[case], rtol=2e-5, atol=2e-6)


def test_dcasgd_momentum_formula():
    # MXNet 1.9.1's DCASGD with momentum raises (`if mom:` on an array); kiln runs the
    # update its docstring defines: mom = m*mom - lr*(g + wd*w + lamda*g*g*(w - w_prev))
    w0, grads = FIXTURE["weight0"], FIXTURE["grads"] * 0.5
    got = run("dcasgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}, FIXTURE["grads"],
              w0)
    w, prev, mom = w0.astype(np.float64), w0.astype(np.float64), np.zeros_like(w0, np.float64)
    for k, g in enumerate(grads):
        mom = 0.9 * mom - 0.1 * (g + 0.01 * w + 0.04 * g * g * (w - prev))
        prev, w = w, w + mom
        np.testing.assert_allclose(got[k], w, rtol=1e-5, atol=1e-6)


def test_sgld_is_a_half_step_plus_noise_of_variance_lr():
    kiln.random.seed(3)
    w0 = np.zeros(20000, np.float32)
    g = np.ones(20000, np.float32)
    opt = optimizer.create("sgld", learning_rate=0.04)
    w = w0.copy()
    opt.update(0, w, g, None)
    noise = w - (-0.04 / 2)
    assert abs(noise.mean()) < 0.005 and abs(noise.std() - 0.2) < 0.005
    kiln.random.seed(3)
    again = w0.copy()
    opt.update(0, again, g, None)
    np.testing.assert_array_equal(w, again)


def test_trainer_runs_new_optimizers_and_compiled_step_refuses():
    from kiln import autograd
    from kiln import gluon, np as knp
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "lamb", {"learning_rate": 0.1})
    w0 = net.weight.data().asnumpy().copy()
    with autograd.record():
        loss = net(knp.ones((4, 3))).sum()
    loss.backward()
    trainer.step(4)
    assert not np.allclose(net.weight.data().asnumpy(), w0)
    with pytest.raises(KilnError, match="eagerly only"):
        trainer.optimizer.scalars(0.1, 0.0, 1)


def test_updater_states_roundtrip():
    opt = optimizer.create("ftml", learning_rate=0.1)
    up = optimizer.get_updater(opt)
    w = np.ones(3, np.float32)
    up(0, np.ones(3, np.float32), w)
    other = optimizer.get_updater(optimizer.create("ftml", learning_rate=0.1))
    other.set_states(up.get_states())
    for a, b in zip(up.states[0], other.states[0]):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(KilnError, match="never pickles"):
        up.get_states(dump_optimizer=True)
