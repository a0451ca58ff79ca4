"""kiln.fit's compiled step (kiln.fit.make_step) takes its batch as a run-time size: an
epoch whose last batch is smaller runs one program, for an MLP and for a CNN (whose
convolution and pooling gradients take their oneDNN op for the call's batch), equal to
the same step run eagerly."""
import numpy as onp
import pytest

import kiln
from kiln import gluon, np
from kiln.fit import make_step
from kiln.gluon import nn


def _mlp():
    net = nn.HybridSequential()
    net.add(nn.Dense(32, activation="relu", in_units=20), nn.Dense(10, in_units=32))
    return net, (20,)


def _cnn():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, 5, padding=2, activation="relu", in_channels=1), nn.MaxPool2D(2, 2),
            nn.Conv2D(16, 5, activation="relu", in_channels=6), nn.AvgPool2D(2, 2),
            nn.Dense(10, in_units=16 * 5 * 5))
    return net, (1, 28, 28)


def _twins(make):
    (a, shape), (b, _) = make(), make()
    a.initialize()
    b.initialize()
    for p, q in zip(a.collect_params().values(), b.collect_params().values()):
        q.set_data(p.data())
    return a, b, shape


def _available(backend):
    from kiln.backend.c import build
    return backend == "numpy" or build.available()


@pytest.mark.parametrize("backend", ["c", "numpy"])
@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_epochs_with_a_last_smaller_batch_run_one_compiled_step(model, backend):
    if not _available(backend):
        pytest.skip("no C compiler")
    if model == "cnn" and backend == "c":
        from kiln.backend import dnnl
        if not dnnl.available():
            pytest.skip("convolutions take run-time sizes on oneDNN only")
    a, b, shape = _twins({"mlp": _mlp, "cnn": _cnn}[model])
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    trainers = [gluon.Trainer(m.collect_params(), "sgd", {"learning_rate": 0.1,
                                                           "momentum": 0.9}) for m in (a, b)]
    eager = make_step(a, loss, trainers[0], compiled=False)
    compiled = make_step(b, loss, trainers[1], backend=backend)
    rng = onp.random.default_rng(0)
    for _ in range(2):
        for batch in (12, 12, 12, 7):
            x = np.array(rng.normal(size=(batch,) + shape).astype("float32"))
            y = np.array(rng.integers(0, 10, size=batch).astype("float32"))
            onp.testing.assert_allclose(compiled(x, y).asnumpy(), eager(x, y).asnumpy(),
                                        rtol=1e-4, atol=1e-5)
    for p, q in zip(a.collect_params().values(), b.collect_params().values()):
        onp.testing.assert_allclose(q.data().asnumpy(), p.data().asnumpy(), rtol=1e-4,
                                    atol=1e-5)
    listing = kiln.programs(compiled)
    assert len(listing) == 1 and not listing.refused, str(listing)
    assert listing.programs[0].symbolic is not None, str(listing)
    assert listing.programs[0].backend == backend, str(listing)


def test_static_shape_compiles_one_step_per_batch_size():
    a, b, shape = _twins(_mlp)
    trainer = gluon.Trainer(b.collect_params(), "sgd", {"learning_rate": 0.1})
    step = make_step(b, gluon.loss.L2Loss(), trainer, backend="numpy", static_shape=True)
    for batch in (4, 4, 3):
        step(np.ones((batch,) + shape), np.zeros((batch, 10)))
    listing = kiln.programs(step)
    assert len(listing) == 2 and all(p.symbolic is None for p in listing.programs)
