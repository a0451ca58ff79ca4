"""Regressions from a review of control-flow conversion and compiled training steps."""
import warnings

import numpy as onp
import pytest

import kiln
from kiln import np, gluon
from kiln import autograd
from kiln.fit import make_step
from kiln.gluon import nn

pytestmark = [pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning"),
              pytest.mark.filterwarnings("ignore::kiln.hybrid.fallback.HybridizeFallbackWarning")]
BACKENDS = ["numpy", "c"]


def _values(out):
    return [o.asnumpy().tolist() if hasattr(o, "asnumpy") else o for o in out]


@pytest.mark.parametrize("backend", BACKENDS)
def test_name_first_assigned_inside_a_loop_exists_after_it(backend):
    def f(x):
        while x.sum() < 100:
            t = x * 2
            x = t
        return x, t
    x = np.array([1.0, 2.0, 3.0])
    assert _values(kiln.hybridize(f, backend=backend)(x)) == _values(f(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_item_assignment_inside_an_array_branch(backend):
    def f(x):
        y = x * 1
        if y.sum() > 5:
            y[0] = 10.0
        return y
    for v in ([1.0, 2.0, 3.0], [0.0, 1.0, 2.0]):
        x = np.array(v)
        assert _values([kiln.hybridize(f, backend=backend)(x)]) == _values([f(x)])


def test_random_draws_in_loops_and_multi_result_branches_stay_consistent():
    def loop(x):
        s = x * 1
        while s.sum() < 10:
            s = s + np.random.uniform(0, 1, size=(3,))
        return s
    h = kiln.hybridize(loop)
    x = np.zeros(3)
    assert not onp.allclose(h(x).asnumpy(), h(x).asnumpy())

    def branch(x):
        if x.sum() > 0:
            m = np.random.uniform(0, 1, size=(3,))
            a = x * m
        else:
            m = x * 0
            a = x * 0
        return a, m
    a, m = kiln.hybridize(branch)(np.ones(3))
    onp.testing.assert_allclose(a.asnumpy(), m.asnumpy())


def test_a_for_loop_that_runs_no_time_keeps_the_loop_variable():
    def f(x, n):
        s = x * 0
        i = 100
        for i in range(n):
            s = s + x
        return s, i
    for n in (0, 3):
        nn_ = np.array(n, dtype="int64")
        assert _values(kiln.hybridize(f)(np.ones(2), nn_)) == _values(f(np.ones(2), nn_))


def test_attribute_names_are_not_watched_as_globals():
    global mean
    h = kiln.hybridize(lambda x: x.mean() * 2)
    for i in range(4):
        mean = float(i)   # noqa: F841  (a global sharing the name of x.mean)
        h(np.ones(3))
    assert len(h._cached.entries) == 1


def test_a_compiled_training_step_called_inside_record():
    net = nn.HybridSequential()
    net.add(nn.Dense(4, in_units=3))
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    step = kiln.hybridize(make_step(net, gluon.loss.L2Loss(), trainer, compiled=False))
    before = net[0].weight.data().asnumpy().copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with autograd.record():
            loss = step(np.ones((2, 3)), np.zeros((2, 4)))
    assert loss.shape == (2,)
    assert not onp.allclose(net[0].weight.data().asnumpy(), before)


def test_arrays_read_in_a_helper_method_are_watched_and_its_branches_converted():
    class Scaled(nn.HybridBlock):
        def __init__(self):
            super().__init__()
            self.scale = np.array([2.0, 2.0])
            self.limit = 1.0

        def rescale(self, x):
            if x.sum() > self.limit:        # an array-dependent branch inside the helper
                return x * self.scale
            return x - self.scale

        def forward(self, x):
            return self.rescale(x) + 1

    block = Scaled()
    block.hybridize()
    big, small = np.array([3.0, 4.0]), np.array([0.1, 0.2])
    onp.testing.assert_allclose(block(big).asnumpy(), [7.0, 9.0])
    onp.testing.assert_allclose(block(small).asnumpy(), [-0.9, -0.8])
    block.scale = np.array([10.0, 10.0])      # a new array read only inside the helper
    onp.testing.assert_allclose(block(big).asnumpy(), [31.0, 41.0])
    block.scale[:] = 3.0                      # changed in place
    onp.testing.assert_allclose(block(big).asnumpy(), [10.0, 13.0])
    block.limit = 100.0                       # a number read only inside the helper
    onp.testing.assert_allclose(block(big).asnumpy(), [1.0, 2.0])
