"""Threads: per-thread autograd and tracing state, one trace per signature when threads make
a hybridized block's first calls at once, and a clear error when two threads train through
one Parameter at the same time (issue 24).

Each test compares what threads compute with the same work done on one thread, bit for bit.
"""
import sys
import threading

import numpy as onp
import pytest

import kiln
from kiln import autograd, gluon, np
from kiln.base import KilnError
from kiln.gluon import nn, rnn

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

JOIN_SECONDS = 120


@pytest.fixture(autouse=True)
def frequent_thread_switches():
    """Switch threads every 20 us instead of 5 ms, so that they interleave inside kiln's
    calls rather than taking turns between them."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(2e-5)
    yield
    sys.setswitchinterval(before)


def run_in_threads(n, fn):
    """fn(k) on n threads released together; their results, after every thread succeeded."""
    barrier = threading.Barrier(n)
    results, errors = [None] * n, []

    def work(k):
        try:
            barrier.wait()
            results[k] = fn(k)
        except BaseException as exc:     # reported below: pytest does not see thread errors
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,), name=f"worker-{k}") for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_SECONDS)
    assert not any(t.is_alive() for t in threads), "a thread hangs"
    assert not errors, f"{len(errors)} of {n} threads failed; the first: {errors[0]!r}"
    return results


# ---- models: each maker returns (block, input shape); shapes are given unless deferred ----

def mlp(deferred=False):
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation="relu", in_units=0 if deferred else 8),
            nn.Dense(3, in_units=0 if deferred else 16))
    return net, (6, 8)


def cnn(deferred=False):
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, in_channels=0 if deferred else 2, activation="relu"),
            nn.MaxPool2D(), nn.Flatten(), nn.Dense(3, in_units=0 if deferred else 36))
    return net, (4, 2, 8, 8)


class _LSTMNet(gluon.HybridBlock):
    def __init__(self, deferred):
        super().__init__()
        self.lstm = rnn.LSTM(8, input_size=0 if deferred else 5)
        self.out = nn.Dense(3, in_units=0 if deferred else 8, flatten=False)

    def forward(self, x):
        return self.out(self.lstm(x))


def lstm(deferred=False):
    return _LSTMNet(deferred), (6, 2, 5)


MODELS = {"mlp": mlp, "cnn": cnn, "lstm": lstm}


def fresh(kind, seed, deferred=False, hybridize=True):
    """A new model with seeded weights (drawn now, or at its first call when deferred)."""
    np.random.seed(seed)
    net, shape = MODELS[kind](deferred)
    net.initialize()
    if hybridize:
        net.hybridize()
    return net, shape


def data(shape, seed):
    rng = onp.random.default_rng(seed)
    return np.array(rng.standard_normal(shape).astype("float32"))


def weights(net):
    return {name: p.data().asnumpy() for name, p in net.collect_params().items()}


def assert_same_weights(got, want):
    assert got.keys() == want.keys()
    for name in want:
        onp.testing.assert_array_equal(got[name], want[name], err_msg=name)


# ---- autograd state is per thread --------------------------------------------------------

def test_threads_recording_their_own_arrays_get_their_own_gradients():
    # the repro: 3 of 4 threads raised "cannot differentiate", the 4th was wrong
    def work(k):
        x = np.ones((64, 64))
        x.attach_grad()
        for _ in range(200):
            with autograd.record():
                y = (x * x).sum()
            y.backward()
            assert float(x.grad[0, 0]) == 2.0
    run_in_threads(4, work)


def test_recording_in_one_thread_is_not_recording_in_another():
    inside, done = threading.Event(), threading.Event()

    def record_and_wait():
        with autograd.record(train_mode=True):
            inside.set()
            done.wait(JOIN_SECONDS)

    t = threading.Thread(target=record_and_wait)
    t.start()
    try:
        assert inside.wait(JOIN_SECONDS)
        assert not autograd.is_recording() and not autograd.is_training()
        x = np.ones(3)
        x.attach_grad()
        y = (x * 2).sum()
        with pytest.raises(KilnError, match="cannot differentiate"):
            y.backward()
    finally:
        done.set()
        t.join(JOIN_SECONDS)


class _WaitsWhileTraced(nn.HybridBlock):
    """A block whose trace stops halfway until the test lets it go on."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, in_units=4)
        self.inside, self.go_on = threading.Event(), threading.Event()

    def forward(self, x):
        y = self.dense(x)
        self.inside.set()
        self.go_on.wait(JOIN_SECONDS)
        return y * 2


def _waiting_block():
    np.random.seed(3)
    block = _WaitsWhileTraced()
    block.initialize()
    block.hybridize()
    return block


def test_a_trace_in_one_thread_leaves_another_threads_calls_eager():
    reference = _waiting_block()
    reference.go_on.set()
    tracing = _waiting_block()
    x = data((2, 4), 0)
    eager, _ = fresh("mlp", 1, hybridize=False)
    compiled, _ = fresh("mlp", 1)
    want = eager(data((6, 8), 2)).asnumpy()
    want_compiled = compiled(data((6, 8), 2)).asnumpy()   # before the other thread traces
    out = []
    t = threading.Thread(target=lambda: out.append(tracing(x).asnumpy()))
    t.start()
    try:
        assert tracing.inside.wait(JOIN_SECONDS)
        # Parameter.data() here must give this thread's arrays, not the other's symbols
        onp.testing.assert_array_equal(eager(data((6, 8), 2)).asnumpy(), want)
        onp.testing.assert_array_equal(compiled(data((6, 8), 2)).asnumpy(), want_compiled)
        assert np.random.uniform(size=3).asnumpy().shape == (3,)
    finally:
        tracing.go_on.set()
        t.join(JOIN_SECONDS)
    onp.testing.assert_array_equal(out[0], reference(x).asnumpy())


# ---- first calls of a hybridized block from many threads ---------------------------------

@pytest.mark.parametrize("kind", ["mlp", "cnn", "lstm"])
def test_first_calls_from_8_threads_trace_once_and_agree_with_one_thread(kind):
    for attempt in range(3):
        net, shape = fresh(kind, 10 + attempt, deferred=True)
        x = data(shape, attempt)
        want = net(x).asnumpy()                      # one thread: the reference
        net, _ = fresh(kind, 10 + attempt, deferred=True)
        outs = run_in_threads(8, lambda k: net(x).asnumpy())
        for out in outs:
            onp.testing.assert_array_equal(out, want)
        assert len(net._kiln_cached.entries) == 1    # one trace for the one signature


def test_first_calls_of_a_hybridized_function_from_8_threads():
    np.random.seed(4)
    dense = nn.Dense(3, in_units=7)       # its parameters are read while f is traced
    dense.initialize()

    def f(a):
        return np.tanh(dense(a)) + a.sum(axis=1, keepdims=True)

    a = data((5, 7), 0)
    want = kiln.hybridize(f)(a).asnumpy()
    for _ in range(3):
        g = kiln.hybridize(f)
        for out in run_in_threads(8, lambda k: g(a).asnumpy()):
            onp.testing.assert_array_equal(out, want)


def test_threads_with_different_signatures_compile_side_by_side():
    batches = [1, 2, 3, 5]
    net, _ = fresh("mlp", 3)
    want = {n: net(data((n, 8), n)).asnumpy() for n in batches}
    net, _ = fresh("mlp", 3)
    outs = run_in_threads(4, lambda k: net(data((batches[k], 8), batches[k])).asnumpy())
    for n, out in zip(batches, outs):
        onp.testing.assert_array_equal(out, want[n])


# ---- training in threads equals training one after another -------------------------------

def _train(net, shape, seed, steps):
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.05, "momentum": 0.9})
    loss_fn = gluon.loss.L2Loss()
    x = data(shape, seed)
    y = data(net(x).shape, seed + 100)
    for _ in range(steps):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(shape[0])
    return weights(net)


@pytest.mark.parametrize("hybridize", [False, True], ids=["eager", "hybridized"])
@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_threads_training_their_own_models_end_as_serial_training(kind, hybridize):
    steps = 5
    serial = []
    for k in range(4):
        net, shape = fresh(kind, 20 + k, hybridize=hybridize)
        serial.append(_train(net, shape, k, steps))
    nets = [fresh(kind, 20 + k, hybridize=hybridize) for k in range(4)]
    threaded = run_in_threads(4, lambda k: _train(*nets[k], k, steps))
    for got, want in zip(threaded, serial):
        assert_same_weights(got, want)


def _life(made, k, shared, shared_x):
    """One thread's work: a fresh hybridized model's first call, steady calls (of it and of
    a model every thread shares), then training steps; what it saw along the way."""
    net, shape = made
    x = data(shape, k)
    seen = [net(x).asnumpy()]
    for _ in range(10):
        seen.append(net(x).asnumpy())
        seen.append(shared(shared_x).asnumpy())
    seen.extend(_train(net, shape, 7, 3).values())
    seen.append(net(x).asnumpy())
    return seen


@pytest.mark.parametrize("kind", ["mlp", "cnn", "lstm"])
def test_stress_first_calls_steady_calls_and_training_in_threads_match_one_thread(kind):
    shared, shared_shape = fresh(kind, 99)
    shared_x = data(shared_shape, 99)
    # one thread, the work of each in turn; then fresh models with the same seeds in threads
    serial = [_life(fresh(kind, 40 + k), k, shared, shared_x) for k in range(4)]
    nets = [fresh(kind, 40 + k) for k in range(4)]
    threaded = run_in_threads(4, lambda k: _life(nets[k], k, shared, shared_x))
    for got, want in zip(threaded, serial):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            onp.testing.assert_array_equal(g, w)


# ---- what threads may not share -----------------------------------------------------------

class _Gate(autograd.Function):
    """Identity whose backward waits, so a test can act while a backward() is running."""

    def __init__(self, inside, go_on):
        super().__init__()
        self.inside, self.go_on = inside, go_on

    def forward(self, x):
        return x * 1

    def backward(self, dy):
        self.inside.set()
        self.go_on.wait(JOIN_SECONDS)
        return dy


@pytest.mark.parametrize("hybridize", [False, True], ids=["eager", "hybridized"])
def test_two_threads_training_through_one_parameter_at_once_is_an_error(hybridize):
    net, shape = fresh("mlp", 5, hybridize=hybridize)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x = data(shape, 0)
    inside, go_on = threading.Event(), threading.Event()
    errors = []

    def backward_that_waits():
        try:
            with autograd.record():
                loss = _Gate(inside, go_on)(net(x)).sum()
            loss.backward()
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=backward_that_waits, name="first")
    t.start()
    try:
        assert inside.wait(JOIN_SECONDS)
        before = weights(net)
        with autograd.record():
            loss = net(x).sum()
        with pytest.raises(KilnError, match="same Parameter at once") as info:
            loss.backward()
        assert "'first'" in str(info.value) and "one lock" in str(info.value)
        with pytest.raises(KilnError, match="Trainer.step .* while backward"):
            trainer.step(1)
        assert_same_weights(weights(net), before)    # refused before anything was written
    finally:
        go_on.set()
        t.join(JOIN_SECONDS)
    assert not errors
    with autograd.record():                          # one at a time again: fine
        loss = net(x).sum()
    loss.backward()
    trainer.step(1)


def test_threads_sharing_a_model_under_a_lock_train_without_error():
    net, shape = fresh("mlp", 6)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
    lock = threading.Lock()

    def work(k):
        x = data(shape, k)
        for _ in range(20):
            with lock:
                with autograd.record():
                    loss = net(x).sum()
                loss.backward()
                trainer.step(shape[0])
            net(x)          # inference needs no lock
    run_in_threads(3, work)
