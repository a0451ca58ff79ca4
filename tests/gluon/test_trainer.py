"""gluon.Trainer and kiln.optimizer: step-by-step against torch.optim and closed forms."""
import numpy as onp
import pytest

from kiln import autograd
from kiln import np, optimizer
from kiln import lr_scheduler
from kiln.base import KilnError
from kiln.gluon.parameter import Parameter
from kiln.gluon.trainer import Trainer


def _param(name, value, **kwargs):
    p = Parameter(name, shape=value.shape, **kwargs)
    p.initialize()
    p.set_data(value)
    return p


def _problem(seed=0):
    r = onp.random.default_rng(seed)
    w0 = r.normal(size=(5, 3)).astype("f4")
    b0 = r.normal(size=(3,)).astype("f4")
    xs = r.normal(size=(50, 8, 5)).astype("f4")
    ys = r.normal(size=(50, 8, 3)).astype("f4")
    return w0, b0, xs, ys


def _kiln_step(trainer, w, b, x, y):
    with autograd.record():
        out = np.matmul(np.array(x), w.data()) + b.data()
        loss = ((out - np.array(y)) ** 2).sum()
    loss.backward()
    trainer.step(x.shape[0])


TORCH_CASES = {
    "sgd": ("sgd", {"learning_rate": 0.05}, "SGD", {"lr": 0.05}),
    "sgd_momentum_wd": ("sgd", {"learning_rate": 0.05, "momentum": 0.9, "wd": 1e-3},
                        "SGD", {"lr": 0.05, "momentum": 0.9, "weight_decay": 1e-3}),
    "nag": ("nag", {"learning_rate": 0.02, "momentum": 0.9, "wd": 1e-3},
            "SGD", {"lr": 0.02, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-3}),
    "adam": ("adam", {"learning_rate": 0.01, "wd": 1e-3},
             "Adam", {"lr": 0.01, "weight_decay": 1e-3}),
    "adamw": ("adamw", {"learning_rate": 0.01, "wd": 0.05, "beta1": 0.8},
              "AdamW", {"lr": 0.01, "weight_decay": 0.05, "betas": (0.8, 0.999)}),
}


@pytest.mark.parametrize("case", sorted(TORCH_CASES))
def test_matches_torch_optim_for_50_steps(case):
    torch = pytest.importorskip("torch")
    name, kparams, tname, tparams = TORCH_CASES[case]
    w0, b0, xs, ys = _problem()
    w, b = _param("weight", w0), _param("bias", b0)
    trainer = Trainer({"0.weight": w, "0.bias": b}, name, kparams)
    tw = torch.tensor(w0, requires_grad=True)
    tb = torch.tensor(b0, requires_grad=True)
    topt = getattr(torch.optim, tname)([tw, tb], **tparams)
    for x, y in zip(xs, ys):
        _kiln_step(trainer, w, b, x, y)
        topt.zero_grad()
        # the trainer divides by the batch size, so torch sees the mean over the batch
        ((torch.tensor(x) @ tw + tb - torch.tensor(y)) ** 2).sum().div(x.shape[0]).backward()
        topt.step()
        onp.testing.assert_allclose(w.data().asnumpy(), tw.detach().numpy(), rtol=1e-4,
                                    atol=1e-5)
        onp.testing.assert_allclose(b.data().asnumpy(), tb.detach().numpy(), rtol=1e-4,
                                    atol=1e-5)


def test_update_is_in_place_and_keeps_identity():
    w0, b0, xs, ys = _problem()
    w, b = _param("weight", w0), _param("bias", b0)
    arr, buf = w.data(), w.data()._data
    trainer = Trainer([w, b], "sgd", {"learning_rate": 0.1})
    _kiln_step(trainer, w, b, xs[0], ys[0])
    assert w.data() is arr and w.data()._data is buf
    assert not onp.allclose(buf, w0)


def test_sgd_closed_form_with_momentum_and_clipping():
    w = _param("w", onp.array([1.0, -2.0], "f4"))
    w.grad()._data[...] = [4.0, -40.0]
    opt = optimizer.SGD(learning_rate=0.1, momentum=0.5, wd=0.1, clip_gradient=1.0)
    trainer = Trainer([w], opt)
    trainer.step(2)                    # grad/2 = [2, -20] -> clipped [1, -1]; + wd*w
    g1 = onp.array([1.0 + 0.1 * 1.0, -1.0 + 0.1 * -2.0])
    mom = -0.1 * g1
    expect = onp.array([1.0, -2.0]) + mom
    onp.testing.assert_allclose(w.data().asnumpy(), expect, rtol=1e-6)
    trainer.step(2)
    g2 = onp.array([1.0, -1.0]) + 0.1 * expect
    mom = 0.5 * mom - 0.1 * g2
    onp.testing.assert_allclose(w.data().asnumpy(), expect + mom, rtol=1e-6)


def test_adam_first_step_moves_each_weight_by_lr():
    w = _param("w", onp.zeros(4, "f4"))
    w.grad()._data[...] = [3.0, -0.5, 1e-3, -100.0]
    Trainer([w], "adam", {"learning_rate": 0.01}).step(1)
    onp.testing.assert_allclose(w.data().asnumpy(), [-0.01, 0.01, -0.01, 0.01], rtol=1e-4)


def test_lr_mult_wd_mult_and_null_grad_req():
    frozen = _param("frozen", onp.ones(3, "f4"), grad_req="null")
    slow = _param("slow", onp.ones(3, "f4"), lr_mult=0.5)
    nodecay = _param("nodecay", onp.ones(3, "f4"), wd_mult=0.0)
    for p in (slow, nodecay):
        p.grad()._data[...] = 1.0
    trainer = Trainer({"a": frozen, "b": slow, "c": nodecay}, "sgd",
                      {"learning_rate": 0.1, "wd": 1.0})
    trainer.step(1)
    onp.testing.assert_allclose(frozen.data().asnumpy(), 1.0)
    onp.testing.assert_allclose(slow.data().asnumpy(), 1 - 0.05 * (1 + 1))
    onp.testing.assert_allclose(nodecay.data().asnumpy(), 1 - 0.1 * 1)


def test_learning_rate_property_and_scheduler():
    w = _param("w", onp.ones(2, "f4"))
    trainer = Trainer([w], "sgd", {"learning_rate": 0.5})
    assert trainer.learning_rate == 0.5
    trainer.set_learning_rate(0.25)
    assert trainer.learning_rate == 0.25
    sched = lr_scheduler.FactorScheduler(step=2, factor=0.5)
    trainer = Trainer([w], "sgd", {"learning_rate": 1.0, "lr_scheduler": sched})
    lrs = []
    for _ in range(6):
        w.grad()._data[...] = 0
        trainer.step(1)
        lrs.append(trainer.learning_rate)
    assert lrs == [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]
    with pytest.raises(KilnError):
        trainer.set_learning_rate(0.1)


def test_schedulers_closed_form():
    m = lr_scheduler.MultiFactorScheduler(step=[2, 5], factor=0.1, base_lr=1.0)
    assert [round(m(t), 6) for t in range(1, 8)] == [1.0, 1.0, 0.1, 0.1, 0.1, 0.01, 0.01]
    c = lr_scheduler.CosineScheduler(max_update=10, base_lr=1.0, final_lr=0.0)
    assert c(0) == 1.0 and abs(c(5) - 0.5) < 1e-12 and c(10) < 1e-12 and c(11) == 0.0
    warm = lr_scheduler.CosineScheduler(max_update=10, base_lr=1.0, warmup_steps=4)
    assert warm(2) == 0.5


def test_save_and_load_states_resume_exactly(tmp_path):
    w0, b0, xs, ys = _problem(1)

    def run(steps, trainer, w, b, start):
        for i in range(start, start + steps):
            _kiln_step(trainer, w, b, xs[i], ys[i])

    w, b = _param("weight", w0), _param("bias", b0)
    trainer = Trainer({"w": w, "b": b}, "adam", {"learning_rate": 0.01})
    run(10, trainer, w, b, 0)
    trainer.save_states(str(tmp_path / "t.states"))
    saved_w, saved_b = w.data().asnumpy(), b.data().asnumpy()
    run(5, trainer, w, b, 10)
    w2, b2 = _param("weight", saved_w), _param("bias", saved_b)
    trainer2 = Trainer({"w": w2, "b": b2}, "adam", {"learning_rate": 0.01})
    trainer2.load_states(str(tmp_path / "t.states"))
    run(5, trainer2, w2, b2, 10)
    onp.testing.assert_array_equal(w2.data().asnumpy(), w.data().asnumpy())
    onp.testing.assert_array_equal(b2.data().asnumpy(), b.data().asnumpy())
    raw = onp.load(tmp_path / "t.states", allow_pickle=False)  # plain npz, no pickle inside
    assert "__format__" in raw.files


def test_load_states_refuses_other_parameters(tmp_path):
    w = _param("w", onp.ones(2, "f4"))
    w.grad()._data[...] = 1
    t = Trainer({"w": w}, "sgd", {"momentum": 0.9})
    t.step(1)
    t.save_states(str(tmp_path / "s"))
    other = Trainer({"v": _param("v", onp.ones(2, "f4"))}, "sgd", {"momentum": 0.9})
    with pytest.raises(KilnError, match="belongs to parameter"):
        other.load_states(str(tmp_path / "s"))


def test_bad_arguments_are_clear_errors():
    w = _param("w", onp.ones(2, "f4"))
    with pytest.raises(KilnError, match="unknown optimizer"):
        Trainer([w], "adagradx")
    with pytest.raises(KilnError, match="more than once"):
        Trainer([w, w], "sgd")
    with pytest.raises(KilnError, match="batch_size"):
        Trainer([w], "sgd").step(0)
    assert set(optimizer.registered()) >= {"sgd", "nag", "adam", "adamw"}
    assert isinstance(optimizer.create("AdamW", learning_rate=0.1), optimizer.AdamW)


@pytest.mark.parametrize("hybridize", [False, True])
def test_trains_a_gluon_network_in_place(hybridize):
    import warnings
    from kiln.gluon import nn, loss as gloss
    net = nn.HybridSequential()
    net.add(nn.Dense(8, activation="relu"), nn.Dense(2))
    net.initialize()
    if hybridize:
        net.hybridize()
    r = onp.random.default_rng(3)
    x = np.array(r.normal(size=(32, 4)).astype("f4"))
    y = np.array((x.asnumpy()[:, 0] + x.asnumpy()[:, 1] > 0).astype("i4"))  # learnable
    loss_fn = gloss.SoftmaxCrossEntropyLoss()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net(x)
        params = net.collect_params()
        arrays = {k: p.data() for k, p in params.items()}
        trainer = Trainer(params, "sgd", {"learning_rate": 0.5, "momentum": 0.9})
        losses = []
        for _ in range(30):
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(32)
            losses.append(float(loss.mean()))
    assert all(params[k].data() is a for k, a in arrays.items())
    assert losses[-1] < 0.5 * losses[0]
