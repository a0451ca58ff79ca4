"""A whole training step (forward, backward, optimizer update) compiled into one program."""
import numpy as onp
import pytest

import kiln
from kiln import np, gluon, init
from kiln import lr_scheduler
from kiln.fit import make_step as fit_step
from kiln.base import KilnError
from kiln.gluon import nn


def build(kind, seed=0):
    np.random.seed(seed)
    net = nn.HybridSequential()
    if kind == "mlp":
        net.add(nn.Dense(32, activation="relu"), nn.Dense(10))
        shape = (16, 20)
    else:
        # no conv bias before BatchNorm: its true gradient is zero, and Adam would turn the
        # float noise standing in for that zero into full-size steps that differ run to run
        net.add(nn.Conv2D(4, kernel_size=3, padding=1, use_bias=False), nn.BatchNorm(),
                nn.Activation("relu"),
                nn.MaxPool2D(2), nn.Flatten(), nn.Dense(10))
        shape = (8, 1, 6, 6)
    net.initialize(init.Xavier())
    net(np.zeros(shape))
    return net, shape


def twins(kind, optimizer, params):
    a, shape = build(kind)
    b, _ = build(kind)
    for pa, pb in zip(a.collect_params().values(), b.collect_params().values()):
        pb.set_data(pa.data())
    ta = gluon.Trainer(a.collect_params(), optimizer, dict(params))
    tb = gluon.Trainer(b.collect_params(), optimizer, dict(params))
    return (a, ta), (b, tb), shape


def make_step(net, trainer):
    """The eager step; kiln.hybridize(make_step(...)) is the compiled one."""
    return fit_step(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer, compiled=False)


def _data(rng, shape):
    return (np.array(rng.normal(size=shape).astype("float32")),
            np.array(rng.integers(0, 10, size=shape[0]).astype("float32")))


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
@pytest.mark.parametrize("optimizer,params", [
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9}),
    ("adam", {"learning_rate": 0.01}),
    ("adamw", {"learning_rate": 0.01, "wd": 0.05}),
    ("nag", {"learning_rate": 0.05, "momentum": 0.9, "wd": 1e-3, "clip_gradient": 1.0}),
])
def test_compiled_step_matches_eager_for_50_steps(kind, optimizer, params):
    (a, ta), (b, tb), shape = twins(kind, optimizer, params)
    eager, compiled = make_step(a, ta), kiln.hybridize(make_step(b, tb))
    rng = onp.random.default_rng(1)
    for _ in range(50):
        x, y = _data(rng, shape)
        onp.testing.assert_allclose(compiled(x, y).asnumpy(), eager(x, y).asnumpy(),
                                    rtol=1e-4, atol=1e-5)
    for pa, pb in zip(a.collect_params().values(), b.collect_params().values()):
        onp.testing.assert_allclose(pb.data().asnumpy(), pa.data().asnumpy(), rtol=1e-4,
                                    atol=1e-5)
    assert ta.optimizer.num_update == tb.optimizer.num_update == 50


def test_compiled_step_is_one_program_updating_parameters_in_place():
    (a, ta), (b, tb), shape = twins("mlp", "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    step = kiln.hybridize(make_step(b, tb))
    weight = b[0].weight.data()
    buffer = weight._data
    x, y = _data(onp.random.default_rng(0), shape)
    before = buffer.copy()
    step(x, y)
    assert b[0].weight.data() is weight and weight._data is buffer
    assert not onp.allclose(buffer, before)
    g = step.graph(x, y)
    assert {"matmul", "relu", "exp", "log"} <= set(g.ops)
    assert len(step._cached.entries) == 1


def test_learning_rate_changes_are_not_baked_in():
    sched = lr_scheduler.FactorScheduler(step=5, factor=0.5, base_lr=0.1)
    (a, ta), (b, tb), shape = twins("mlp", "sgd", {"learning_rate": 0.1, "lr_scheduler": sched})
    tb._optimizer.lr_scheduler = lr_scheduler.FactorScheduler(step=5, factor=0.5, base_lr=0.1)
    eager, compiled = make_step(a, ta), kiln.hybridize(make_step(b, tb))
    rng = onp.random.default_rng(2)
    for _ in range(12):
        x, y = _data(rng, shape)
        eager(x, y)
        compiled(x, y)
    for pa, pb in zip(a.collect_params().values(), b.collect_params().values()):
        onp.testing.assert_allclose(pb.data().asnumpy(), pa.data().asnumpy(), rtol=1e-4,
                                    atol=1e-6)


def test_eager_and_compiled_steps_share_optimizer_state():
    (a, ta), (b, tb), shape = twins("mlp", "adam", {"learning_rate": 0.01})
    eager_a = make_step(a, ta)
    eager_b, compiled_b = make_step(b, tb), kiln.hybridize(make_step(b, tb))
    rng = onp.random.default_rng(3)
    for i in range(10):
        x, y = _data(rng, shape)
        eager_a(x, y)
        (compiled_b if i % 2 else eager_b)(x, y)
    for pa, pb in zip(a.collect_params().values(), b.collect_params().values()):
        onp.testing.assert_allclose(pb.data().asnumpy(), pa.data().asnumpy(), rtol=1e-4,
                                    atol=1e-6)


def test_grad_req_add_is_refused_in_a_compiled_step():
    net, shape = build("mlp")
    net.collect_params().setattr("grad_req", "add")
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x, y = _data(onp.random.default_rng(0), shape)
    with pytest.raises(KilnError, match="grad_req='add'"):
        kiln.hybridize(make_step(net, trainer))(x, y)


def test_loading_optimizer_states_reaches_the_compiled_step(tmp_path):
    (a, ta), (b, tb), shape = twins("mlp", "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    eager, compiled = make_step(a, ta), kiln.hybridize(make_step(b, tb))
    rng = onp.random.default_rng(5)
    for _ in range(3):
        x, y = _data(rng, shape)
        eager(x, y)
        compiled(x, y)
    ta.save_states(str(tmp_path / "a.states"))
    tb.load_states(str(tmp_path / "a.states"))
    for _ in range(3):
        x, y = _data(rng, shape)
        eager(x, y)
        compiled(x, y)
    for pa, pb in zip(a.collect_params().values(), b.collect_params().values()):
        onp.testing.assert_allclose(pb.data().asnumpy(), pa.data().asnumpy(), rtol=1e-4,
                                    atol=1e-6)


CASES = [("mlp", "softmax_ce"), ("mlp", "l2"), ("cnn", "softmax_ce")]


@pytest.mark.parametrize("backend", ["c", "numpy"])
@pytest.mark.parametrize("kind,loss_name", CASES)
def test_a_whole_step_with_a_last_smaller_batch_every_epoch_is_one_program(backend, kind,
                                                                          loss_name):
    """kiln.fit.make_step names the batch symbolic: the update's 1/batch is computed in
    the graph from the call's batch, the loss's pick selects by comparison, and the
    convolution and pooling gradients take their oneDNN op for the call's batch, so
    epochs of 16, 16, 16 and a last batch of 5 run one program, equal to eager steps."""
    from kiln.backend import dnnl
    from kiln.backend.c import build as c_build
    if backend == "c" and not c_build.available():
        pytest.skip("no C compiler")
    if backend == "c" and kind == "cnn" and not dnnl.available():
        pytest.skip("convolutions take run-time sizes on oneDNN only")
    (a, ta), (b, tb), shape = twins(kind, "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    loss = {"softmax_ce": gluon.loss.SoftmaxCrossEntropyLoss(),
            "l2": gluon.loss.L2Loss()}[loss_name]
    eager = fit_step(a, loss, ta, compiled=False)
    compiled = fit_step(b, loss, tb, backend=backend)
    rng = onp.random.default_rng(4)
    for _ in range(3):
        for batch in (16, 16, 16, 5):
            x = np.array(rng.normal(size=(batch,) + shape[1:]).astype("float32"))
            y = np.array((rng.integers(0, 10, size=batch) if loss_name == "softmax_ce"
                          else rng.normal(size=(batch, 10))).astype("float32"))
            onp.testing.assert_allclose(compiled(x, y).asnumpy(), eager(x, y).asnumpy(),
                                        rtol=1e-5, atol=1e-6)
    for pa, pb in zip(a.collect_params().values(), b.collect_params().values()):
        onp.testing.assert_allclose(pb.data().asnumpy(), pa.data().asnumpy(), rtol=1e-5,
                                    atol=1e-6)
    listing = kiln.programs(compiled)
    assert len(listing) == 1 and not listing.refused, str(listing)
    assert listing.programs[0].symbolic is not None
    assert listing.programs[0].backend == backend, str(listing)
    assert ta.optimizer.num_update == tb.optimizer.num_update == 12


def test_static_shape_compiles_one_step_per_batch_size():
    (a, ta), (b, tb), shape = twins("mlp", "sgd", {"learning_rate": 0.1})
    step = fit_step(b, gluon.loss.L2Loss(), tb, backend="numpy", static_shape=True)
    for batch in (4, 4, 3):
        step(np.ones((batch,) + shape[1:]), np.zeros((batch, 10)))
    listing = kiln.programs(step)
    assert len(listing) == 2 and all(p.symbolic is None for p in listing.programs)
