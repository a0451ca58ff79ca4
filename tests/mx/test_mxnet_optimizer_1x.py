"""MXNet 1.x optimizer behaviour: sparse weights and gradients (lazy row updates,
kiln/mx/nd/sparse/updates.py), float32 master copies of float16 weights, 1.9.1's defaults
and learning-rate rules, and a subclass's own `update` reached through
`update_multi_precision` (kiln/optimizer/base.py). Values from real MXNet 1.9.1."""
import numpy as np
import pytest

from kiln import optimizer
from kiln.mx import nd
from kiln.optimizer import lr_scheduler


def _grad_row_1():
    return nd.sparse.row_sparse_array((np.array([[1.0, 1.0]], "float32"), np.array([1])),
                                      shape=(3, 2))


def _weight():
    return nd.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])


def test_lazy_sgd_updates_only_the_gradients_rows():
    w, opt = _weight(), optimizer.SGD(learning_rate=0.5, wd=0.1, momentum=0.9)
    state = opt.create_state_multi_precision(0, w)
    opt.update_multi_precision(0, w, _grad_row_1(), state)
    assert np.allclose(w.asnumpy(), [[1, 2], [2.35, 3.3], [5, 6]])
    assert np.allclose(np.asarray(state), [[0, 0], [-0.65, -0.7], [0, 0]])


def test_standard_sgd_on_a_row_sparse_gradient_updates_every_row():
    w = _weight()
    opt = optimizer.SGD(learning_rate=0.5, wd=0.1, momentum=0.9, lazy_update=False)
    state = opt.create_state_multi_precision(0, w)
    opt.update_multi_precision(0, w, _grad_row_1(), state)
    assert np.allclose(w.asnumpy(), [[0.95, 1.9], [2.35, 3.3], [4.75, 5.7]])


def test_a_sparse_weight_keeps_its_storage():
    w = _weight().tostype("row_sparse")
    opt = optimizer.SGD(learning_rate=0.5, wd=0.1, momentum=0.9)
    opt.update_multi_precision(0, w, _grad_row_1(), opt.create_state_multi_precision(0, w))
    assert w.stype == "row_sparse"
    assert np.allclose(w.asnumpy(), [[1, 2], [2.35, 3.3], [5, 6]])


def test_float16_weights_update_a_float32_master_copy():
    w16 = nd.array([1.0, 2.0], dtype="float16")
    opt = optimizer.SGD(learning_rate=0.1, multi_precision=True, momentum=0.5)
    state = opt.create_state_multi_precision(0, w16)
    assert isinstance(state, tuple) and [np.dtype(s.dtype) for s in state] == [np.float32] * 2
    opt.update_multi_precision(0, w16, nd.array([1.0, 1.0], dtype="float16"), state)
    assert w16.dtype == np.float16
    assert w16.asnumpy().tolist() == [0.89990234375, 1.900390625]
    assert np.allclose(np.asarray(state[1]), [0.9, 1.9])
    adam_state = optimizer.Adam(multi_precision=True).create_state_multi_precision(0, w16)
    assert np.dtype(adam_state[0].dtype) == np.float32 and isinstance(adam_state[1], tuple)


def test_1x_defaults_and_learning_rate_rules():
    assert optimizer.SGD().lr == 0.01 and optimizer.NAG().lr == 0.01
    assert optimizer.NAG().momentum == 0.0 and optimizer.SGD().lazy_update
    sched = lr_scheduler.FactorScheduler(step=1, base_lr=1024)
    assert optimizer.Optimizer(lr_scheduler=sched).learning_rate == 1024
    owned = optimizer.Optimizer(lr_scheduler=lr_scheduler.FactorScheduler(step=1))
    with pytest.raises(UserWarning):
        owned.set_learning_rate(0.5)


def test_update_multi_precision_calls_a_subclasss_update():
    calls = []

    class Halving(optimizer.Optimizer):
        def update(self, index, weight, grad, state):
            calls.append(index)
            weight[:] = weight / 2

    w = nd.array([4.0])
    Halving().update_multi_precision(3, w, nd.array([1.0]), None)
    assert calls == [3] and w.asnumpy().tolist() == [2.0]
