"""Weights kept packed between calls never serve a stale value: MKL's packs
(backend/c/packed.py) and oneDNN's reordered weights (backend/c/dnnl_dense.py).

Each test runs once per path. It first checks that the path was taken (packs were made;
the program calls oneDNN with the weight's stamp), so that it tests the packed path and
not the plain gemm; then it changes a weight one way kiln allows and checks the next calls.
"""
import warnings

import numpy as onp
import pytest

from kiln import np, gluon
from kiln import autograd, writes
from kiln.backend import dnnl
from kiln.backend.c import build
from kiln.gluon import nn

pytestmark = pytest.mark.skipif(not build.available(), reason="no C compiler")


@pytest.fixture(autouse=True, params=["mkl", "onednn"])
def path(request):
    """Which kind of packed weights the test runs on."""
    if request.param == "mkl":
        with dnnl.disabled():
            yield "mkl"
    else:
        if not dnnl.available():
            pytest.skip("oneDNN not installed")
        yield "onednn"


def _runtime():
    from kiln.backend.c.runtime import runtime
    rt = runtime()
    if rt is None or not rt.sgemm_cached:
        pytest.skip("no BLAS with a pack API (the mkl extra)")
    return rt


def packs_made():
    """MKL packs made so far; None on the oneDNN path, which keeps no such count (its
    reuse is tested in test_dnnl_matmul.py)."""
    return None if dnnl.available() else _runtime().packs_made()


def _sources(net):
    from kiln.hybrid.cached import cached_function_of
    return [e.program.source for e in cached_function_of(net).entries.values()]


def mlp(rows=32):
    net = nn.HybridSequential()
    net.add(nn.Dense(128, activation="relu"), nn.Dense(64))
    net.initialize()
    x = np.array(onp.random.default_rng(0).standard_normal((rows, 96)).astype("float32"))
    return net, x


def eager_output(net, x):
    h = onp.maximum(x.asnumpy() @ net[0].weight.data().asnumpy().T
                    + net[0].bias.data().asnumpy(), 0)
    return h @ net[1].weight.data().asnumpy().T + net[1].bias.data().asnumpy()


def warmed(rows=32):
    """A hybridized net called until its weights are packed."""
    if not dnnl.available():
        _runtime()
    net, x = mlp(rows)
    net.hybridize(backend="c")
    before = packs_made()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            onp.testing.assert_allclose(net(x).asnumpy(), eager_output(net, x), rtol=1e-4,
                                        atol=1e-5)
    if before is None:
        assert all("kiln_dnnl_run(" in s and "kiln_weight_stamp()" in s
                   for s in _sources(net)), "the oneDNN path was not taken"
    else:
        assert packs_made() > before, "the packed path was not taken"
    return net, x


def check_calls(net, x, times=3):
    for _ in range(times):
        onp.testing.assert_allclose(net(x).asnumpy(), eager_output(net, x), rtol=1e-4,
                                    atol=1e-5)


def test_packs_are_made_once_and_reused(path):
    if path == "onednn":
        pytest.skip("oneDNN keeps no count; test_dnnl_matmul.py tests its reuse")
    net, x = warmed()
    made = packs_made()
    check_calls(net, x)
    assert packs_made() == made


def test_setitem_on_a_weight_is_seen():
    net, x = warmed()
    w = net[0].weight.data()
    w[:] = w * 2
    check_calls(net, x)
    w[3] = 0.5
    check_calls(net, x)


def test_inplace_operator_on_a_weight_is_seen():
    net, x = warmed()
    w = net[1].weight.data()
    w += 1
    check_calls(net, x)
    w[2:4] -= 3        # through a view
    check_calls(net, x)


def test_set_data_and_load_parameters_are_seen(tmp_path):
    net, x = warmed()
    net[0].weight.set_data(onp.full((128, 96), 0.01, "float32"))
    check_calls(net, x)
    other, _ = mlp()
    other(x)
    path = str(tmp_path / "w.params")
    other.save_parameters(path)
    made = packs_made()
    net.load_parameters(path)
    check_calls(net, x)
    onp.testing.assert_allclose(net(x).asnumpy(), other(x).asnumpy(), rtol=1e-4, atol=1e-5)
    if made is not None:
        assert packs_made() > made      # repacked from the loaded weights


def test_trainer_steps_between_calls_are_seen():
    net, x = warmed()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    for _ in range(3):
        with autograd.record():
            loss = (net(x) ** 2).mean()
        loss.backward()
        trainer.step(1)
        check_calls(net, x, times=2)


def test_a_weight_written_through_numpy_is_refused():
    net, x = warmed()
    view = onp.asarray(net[0].weight.data())
    with pytest.raises(ValueError):
        view[0, 0] = 1.0
    check_calls(net, x)


def test_a_program_called_with_other_weight_arrays_uses_them():
    net, x = warmed()
    from kiln.hybrid.cached import cached_function_of
    entry, = cached_function_of(net).entries.values()
    program = entry.program
    params = [p.data()._data for p in entry.params]
    inputs = [x._data]
    first = program(inputs, params)[0]
    for make in (lambda a: a * 3,                        # a new array object
                 lambda a: onp.asfortranarray(a * 5)):   # bound through a converted copy
        other = [make(a) for a in params]
        for _ in range(3):
            got = program(inputs, other)[0]
        h = onp.maximum(x.asnumpy() @ other[0].T + other[1], 0)
        onp.testing.assert_allclose(got, h @ other[2].T + other[3], rtol=1e-4, atol=1e-4)
    onp.testing.assert_allclose(program(inputs, params)[0], first, rtol=1e-6)


def test_the_count_moves_on_every_kind_of_write():
    _runtime()
    a = np.ones((4, 4))
    for write in (lambda: a.__setitem__(0, 2.0), lambda: a.__iadd__(1),
                  lambda: a._rebind(np.zeros((4, 4)))):
        before = writes.counter().value
        write()
        assert writes.counter().value > before


def test_an_optimizer_called_directly_is_seen():
    from kiln import optimizer
    net, x = warmed()
    w = net[0].weight
    with autograd.record():
        loss = (net(x) ** 2).mean()
    loss.backward()
    check_calls(net, x)                         # packed again after the backward pass
    made = packs_made()
    check_calls(net, x)
    assert packs_made() == made
    optimizer.SGD(learning_rate=0.5).update(0, w.data(), w.grad(), None)   # MXNet's form
    check_calls(net, x)
    if made is not None:
        assert packs_made() > made


def test_shuffling_a_weight_in_place_is_seen():
    net, x = warmed()
    np.random.shuffle(net[1].weight.data())
    check_calls(net, x)


def test_calls_racing_an_update_do_not_keep_the_old_weights():
    # a serving thread may call the model while an update is half done; what it packs
    # then must not outlive the update (kiln counts a write after it is made)
    from kiln import optimizer
    net, x = warmed()

    class CallsDuringTheUpdate(optimizer.SGD):
        def update(self, index, weight, grad, state):
            if index == 0:
                net(x)
                net(x)
            super().update(index, weight, grad, state)

    trainer = gluon.Trainer(net.collect_params(), CallsDuringTheUpdate(learning_rate=0.5))
    with autograd.record():
        loss = (net(x) ** 2).mean()
    loss.backward()
    trainer.step(1)
    check_calls(net, x)


def test_a_compiled_training_step_then_inference_sees_the_new_weights():
    from kiln.fit import make_step
    from kiln.gluon import loss as gloss
    net, x = warmed()
    y = np.array(onp.random.default_rng(1).standard_normal((32, 64)).astype("float32"))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    step = make_step(net, gloss.L2Loss(), trainer, backend="c")
    for _ in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            step(x, y)
        check_calls(net, x, times=2)


def test_numpy_views_of_kiln_arrays_are_read_only_and_honour_copy():
    a = np.ones((2, 3), dtype="float32")
    assert not onp.asarray(a).flags.writeable
    assert onp.array(a).flags.writeable                      # an explicit copy
    assert onp.asarray(a, dtype="float64").dtype == onp.float64
    with pytest.raises(ValueError):
        a.__array__(onp.dtype("float64"), copy=False)
