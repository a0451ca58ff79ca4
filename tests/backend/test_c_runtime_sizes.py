"""Generated C with run-time sizes (backend/c/sizes.py, sized_program.py): one compiled
program serves every batch size, and equals eager code at each of them."""
import warnings

import numpy as onp
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import kiln
from kiln import np, npx, autograd
from kiln.backend.c import build
from kiln.gluon import nn, Trainer, loss as gloss

pytestmark = [pytest.mark.skipif(not build.available(), reason="no C compiler"),
              pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")]


def _sized(listing):
    return [p for p in listing.programs
            if type(p.entry.program).__name__ == "SizedCProgram"]


def _mlp(widths=(32, 16, 3), in_units=8):
    net = nn.HybridSequential()
    for k, w in enumerate(widths):
        net.add(nn.Dense(w, activation="relu" if k < len(widths) - 1 else None,
                         in_units=in_units))
        in_units = w
    net.initialize()
    return net


def _twins(make):
    net, eager = make(), make()
    for p, q in zip(eager.collect_params().values(), net.collect_params().values()):
        p.set_data(q.data())
    return net, eager


def _rows(batch, width=8, seed=0):
    return np.array(onp.random.RandomState(seed + batch).randn(batch, width)
                    .astype("float32"))


# functions whose every lowering takes run-time sizes: one program serves all batches >= 1
SIZE_GENERIC = {
    "elementwise chain": lambda x: np.tanh(x) * 2 + 1,
    "broadcast over rows": lambda x: x - x.mean(axis=1, keepdims=True),
    "row sums": lambda x: x.sum(axis=1),
    "column sums": lambda x: np.exp(x).sum(axis=0),
    "x times its transpose": lambda x: np.matmul(x, x.T),
    "concatenate along features": lambda x: np.concatenate([x, x * 2], axis=1),
    "where": lambda x: np.where(x > 0, x, 0.5 * x),
    "softmax": lambda x: npx.softmax(x, axis=-1),
    "log_softmax": lambda x: npx.log_softmax(x, axis=-1),
    "layer norm": lambda x: npx.layer_norm(x, np.ones((8,)), np.zeros((8,)), axis=-1,
                                           eps=1e-5),
    "wide rows, parallel": lambda x: npx.softmax(x.sum(axis=1, keepdims=True) *
                                                 np.linspace(-1, 1, 8192), axis=-1),
}
_compiled = {name: kiln.hybridize(f, backend="c", dynamic_axes={"x": {0: "batch"}})
             for name, f in SIZE_GENERIC.items()}


@pytest.mark.parametrize("name", sorted(SIZE_GENERIC))
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(batch=st.one_of(st.just(1), st.just(0), st.integers(0, 300)))
def test_compiled_equals_eager_at_every_batch_size(name, batch):
    f, g = SIZE_GENERIC[name], _compiled[name]
    x = _rows(batch)
    try:
        want = f(x).asnumpy()
    except kiln.KilnError:          # (softmax of no rows: the same error compiled)
        with pytest.raises(kiln.KilnError):
            g(x)
        return
    got = g(x).asnumpy()
    assert got.shape == want.shape
    onp.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(SIZE_GENERIC))
def test_one_sized_program_serves_batches_from_two_up(name):
    g = kiln.hybridize(SIZE_GENERIC[name], backend="c", dynamic_axes={"x": {0: "batch"}})
    for batch in (2, 9, 3, 64, 17):
        g(_rows(batch))
    listing = kiln.programs(g)
    assert len(listing) == 1, str(listing)
    assert len(_sized(listing)) == 1


def test_mlp_batch_1_to_64_compiles_at_most_two_programs():
    net, eager = _twins(lambda: _mlp((64, 32, 10), in_units=48))
    net.hybridize(backend="c")
    for batch in range(1, 65):
        x = _rows(batch, 48)
        onp.testing.assert_allclose(net(x).asnumpy(), eager(x).asnumpy(), rtol=1e-5,
                                    atol=1e-5)
    listing = kiln.programs(net)
    assert len(listing) <= 2, str(listing)
    sized = _sized(listing)
    assert len(sized) == 1 and len(sized[0].signatures) == 63    # batch 1 specialized
    # and the steady state: each size again, served without a new program
    for batch in (64, 1, 33):
        x = _rows(batch, 48)
        onp.testing.assert_allclose(net(x).asnumpy(), eager(x).asnumpy(), rtol=1e-5,
                                    atol=1e-5)
    assert len(kiln.programs(net)) == len(listing)


def test_the_arena_grows_for_a_larger_batch_and_is_reused_below_it():
    net, eager = _twins(_mlp)
    net.hybridize(backend="c", dynamic_axes={"x": {0: "batch"}})
    net(_rows(4))
    program = _sized(kiln.programs(net))[0].entry.program
    small = [b.ctypes.data for b in program.arena]
    assert list(program.limits[:1]) == [4]
    x = _rows(100)
    onp.testing.assert_allclose(net(x).asnumpy(), eager(x).asnumpy(), rtol=1e-5, atol=1e-5)
    grown = [b.ctypes.data for b in program.arena]
    assert grown != small and list(program.limits[:1]) == [100]
    for batch in (7, 100, 1, 0, 55):
        x = _rows(batch)
        onp.testing.assert_allclose(net(x).asnumpy(), eager(x).asnumpy(), rtol=1e-5,
                                    atol=1e-5)
    assert [b.ctypes.data for b in program.arena] == grown


def test_a_program_its_trace_pinned_is_not_served_at_other_sizes():
    """A trace that needed a size's value (a slice over a symbolic axis) guards the
    program; the C dispatcher, which checks no guard, must not serve it other sizes."""
    def f(x):
        return x[:, 1:3] + 1
    g = kiln.hybridize(f, backend="c", dynamic_axes={"x": {0: "batch"}})
    for batch in (3, 3, 5, 0, 1, 3, 5):
        x = _rows(batch)
        got = g(x).asnumpy()
        assert got.shape == (batch, 2)
        onp.testing.assert_allclose(got, f(x).asnumpy(), rtol=1e-6)


def test_a_lowering_that_needs_a_size_falls_back_to_specialized_programs_and_says_why():
    def f(x):
        return np.take(x, np.array([0, 2]), axis=1) * 2
    g = kiln.hybridize(f, backend="c", dynamic_axes={"x": {0: "batch"}})
    for batch in (3, 4, 5):
        x = _rows(batch)
        onp.testing.assert_allclose(g(x).asnumpy(), f(x).asnumpy(), rtol=1e-6)
    listing = kiln.programs(g)
    assert not _sized(listing)
    assert any("NotSizeGeneric" in why for why in listing.refused.values())


def test_a_training_step_with_a_last_smaller_batch_compiles_one_program():
    net, eager = _twins(lambda: _mlp((32, 10), in_units=20))
    net.hybridize(backend="c", dynamic_axes={0: {0: "batch"}})
    loss = gloss.SoftmaxCrossEntropyLoss()
    trainers = [Trainer(m.collect_params(), "sgd", {"learning_rate": 0.1})
                for m in (eager, net)]
    rng = onp.random.RandomState(2)
    for _ in range(2):
        for b in (16, 16, 5):
            x = np.array(rng.rand(b, 20).astype("float32"))
            y = np.array(rng.randint(0, 10, b).astype("float32"))
            for m, tr in zip((eager, net), trainers):
                with autograd.record():
                    out = loss(m(x), y)
                out.backward()
                tr.step(b)
    for p, q in zip(eager.collect_params().values(), net.collect_params().values()):
        onp.testing.assert_allclose(q.data().asnumpy(), p.data().asnumpy(), rtol=1e-5,
                                    atol=1e-6)
    listing = kiln.programs(net)
    assert len(listing) == 1, str(listing)
    entry = listing.programs[0].entry
    assert type(entry.program).__name__ == "SizedCProgram"
    assert type(entry.grad[0]).__name__ == "SizedCProgram"


def test_threads_calling_at_different_sizes_get_their_own_results():
    import threading
    net, eager = _twins(_mlp)
    net.hybridize(backend="c", dynamic_axes={"x": {0: "batch"}})
    net(_rows(2))
    sizes = [1, 5, 40, 3, 200, 7, 64, 2]
    want = {b: eager(_rows(b)).asnumpy() for b in sizes}
    errors = []

    def work(offset):
        try:
            for k in range(30):
                b = sizes[(k + offset) % len(sizes)]
                onp.testing.assert_allclose(net(_rows(b)).asnumpy(), want[b], rtol=1e-5,
                                            atol=1e-5)
        except Exception as exc:      # reported below, with the thread's error
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors[0]


def test_dense_layers_of_run_time_rows_run_on_onednn_in_blocks_and_equal_eager():
    """Dense layers whose batch is a run-time size take oneDNN's matmul where a layer of
    that fixed size would (csrc/sized_dnnl.h), in the blocks it would get (columns split
    below 256 rows, rows from there on), and kiln's gemm below 8 rows."""
    from kiln.backend import dnnl
    net, eager = _twins(lambda: _mlp((256, 128, 10), in_units=64))
    net.hybridize(backend="c", dynamic_axes={"x": {0: "batch"}})
    for batch in (8, 1, 9, 300, 17, 256, 1000, 7, 255, 64):
        x = _rows(batch, 64)
        onp.testing.assert_allclose(net(x).asnumpy(), eager(x).asnumpy(), rtol=1e-4,
                                    atol=1e-5)
    listing = kiln.programs(net)
    assert len(listing) == 1, str(listing)
    source = listing.programs[0].entry.program.source
    assert ("kiln_dense_rows(P[" in source) == dnnl.available()


def _cnn():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, padding=1, activation="relu", in_channels=1), nn.MaxPool2D(2),
            nn.Conv2D(16, 3, padding=1, activation="relu", in_channels=8),
            nn.AvgPool2D(2), nn.Flatten(), nn.Dense(10, in_units=16 * 7 * 7))
    net.initialize()
    return net


def test_a_small_cnn_batch_1_to_64_compiles_at_most_two_programs():
    """Convolutions and poolings of run-time batch take their oneDNN op for the call's
    batch from a cache (dnnl/batch.c). (Without oneDNN their decompositions still need
    the batch's value: one program per size.)"""
    from kiln.backend import dnnl
    if not dnnl.available():
        pytest.skip("convolutions take run-time sizes on oneDNN only")
    net, eager = _twins(_cnn)
    net.hybridize(backend="c")
    rng = onp.random.RandomState(0)
    for batch in list(range(1, 65)) + [5, 1, 64]:
        x = np.array(rng.rand(batch, 1, 28, 28).astype("float32"))
        onp.testing.assert_allclose(net(x).asnumpy(), eager(x).asnumpy(), rtol=1e-4,
                                    atol=1e-5)
    listing = kiln.programs(net)
    assert len(listing) <= 2, str(listing)
    assert len(_sized(listing)) == 1


def _lenet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, 5, padding=2, activation="relu", in_channels=1), nn.MaxPool2D(2, 2),
            nn.Conv2D(16, 5, activation="relu", in_channels=6), nn.MaxPool2D(2, 2),
            nn.Dense(120, activation="relu", in_units=400),
            nn.Dense(84, activation="relu", in_units=120), nn.Dense(10, in_units=84))
    net.initialize()
    return net


def _cnn_batchnorm():
    """BatchNorm in inference, with running statistics that are not the identity's."""
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, padding=1, in_channels=1), nn.BatchNorm(in_channels=8),
            nn.Activation("relu"), nn.MaxPool2D(2, 2),
            nn.Conv2D(16, 3, padding=1, in_channels=8), nn.BatchNorm(in_channels=16),
            nn.Activation("relu"), nn.AvgPool2D(2, 2), nn.Dense(10, in_units=16 * 7 * 7))
    net.initialize()
    rng = onp.random.RandomState(3)
    for name, p in net.collect_params().items():
        if name.endswith(("running_mean", "running_var", "gamma", "beta")):
            low = 0.5 if name.endswith(("running_var", "gamma")) else -0.5
            p.set_data(np.array(rng.uniform(low, low + 1.5, p.shape).astype("float32")))
    return net


CNNS = {"lenet": _lenet, "batchnorm": _cnn_batchnorm}


def _images(batch):
    return np.array(onp.random.RandomState(batch).rand(batch, 1, 28, 28).astype("float32"))


@pytest.mark.parametrize("name", sorted(CNNS))
def test_cnns_compile_two_programs_for_batches_1_to_64_and_equal_eager(name):
    """The issue's row for a small CNN: the first call's program, then one symbolic
    program for every other batch, each call equal to eager code."""
    from kiln.backend import dnnl
    if not dnnl.available():
        pytest.skip("convolutions take run-time sizes on oneDNN only")
    net, eager = _twins(CNNS[name])
    net.hybridize(backend="c")
    for batch in list(range(1, 65)) + [64, 1, 9]:
        x = _images(batch)
        onp.testing.assert_allclose(net(x).asnumpy(), eager(x).asnumpy(), rtol=1e-4,
                                    atol=1e-5)
    listing = kiln.programs(net)
    assert len(listing) == 2, str(listing)
    assert len(_sized(listing)) == 1 and len(_sized(listing)[0].signatures) == 63


@pytest.mark.parametrize("name", sorted(CNNS))
def test_a_cnn_traced_at_batch_1_is_one_program_for_every_batch(name):
    """Traced at batch 1 with the batch named, the layout and fusion passes ask no size
    whether it is 1 and the flatten before the dense layer divides exactly: one program,
    no guard that bounds the batch from 1 up, so the C dispatcher serves it directly."""
    from kiln.backend import dnnl
    if not dnnl.available():
        pytest.skip("convolutions take run-time sizes on oneDNN only")
    net, eager = _twins(CNNS[name])
    net.hybridize(backend="c", dynamic_axes={"x": {0: "batch"}})
    for batch in (1, 7, 64, 2, 1, 33):
        x = _images(batch)
        onp.testing.assert_allclose(net(x).asnumpy(), eager(x).asnumpy(), rtol=1e-4,
                                    atol=1e-5)
    listing = kiln.programs(net)
    assert len(listing) == 1 and len(_sized(listing)) == 1, str(listing)
    program = listing.programs[0].entry.program
    assert program.caller_for([_images(3).asnumpy()]) is not None, str(listing)


def _train_twins(batches, loss_of=lambda out, y: gloss.SoftmaxCrossEntropyLoss()(out, y)):
    """A CNN hybridized with a run-time batch and its eager twin, trained side by side on
    `batches`; the hybridized net (after checking the weights and gradients equal)."""
    net, eager = _twins(_cnn)
    net.hybridize(backend="c", dynamic_axes={0: {0: "batch"}})
    trainers = [Trainer(m.collect_params(), "sgd", {"learning_rate": 0.05})
                for m in (eager, net)]
    rng = onp.random.RandomState(1)
    for b in batches:
        x = np.array(rng.rand(b, 1, 28, 28).astype("float32"))
        y = np.array(rng.randint(0, 10, b).astype("float32"))
        for m, tr in zip((eager, net), trainers):
            with autograd.record():
                out = loss_of(m(x), y)
            out.backward()
            tr.step(max(b, 1))
        for p, q in zip(eager.collect_params().values(), net.collect_params().values()):
            onp.testing.assert_allclose(q.grad().asnumpy(), p.grad().asnumpy(), rtol=1e-4,
                                        atol=1e-5)
            onp.testing.assert_allclose(q.data().asnumpy(), p.data().asnumpy(), rtol=1e-4,
                                        atol=1e-5)
    return net


def test_a_cnn_training_step_takes_a_run_time_batch():
    """The gradients of convolutions and poolings (the max pool's workspace shared with
    its gradient, sized per call) take their oneDNN op for the call's batch from a cache:
    one program serves every batch, equal to eager code."""
    from kiln.backend import dnnl
    if not dnnl.available():
        pytest.skip("convolutions take run-time sizes on oneDNN only")
    net = _train_twins((6, 4, 1, 9, 6))
    listing = kiln.programs(net)
    assert len(listing) == 1 and len(_sized(listing)) == 1, str(listing)
    assert len(_sized(listing)[0].signatures) == 4      # 6, 4, 1 and 9


def test_a_cnn_training_step_of_no_images_trains_like_eager():
    """A batch of 0 between others: the convolutions' weight gradients (a sum over no
    images) are zeros, not the last batch's, whichever program serves it."""
    from kiln.backend import dnnl
    if not dnnl.available():
        pytest.skip("convolutions take run-time sizes on oneDNN only")
    _train_twins((5, 0, 3, 0), loss_of=lambda out, y: out.sum())


def test_fixed_size_buffers_of_a_program_first_called_with_no_rows():
    """The arena starts at size 0 of every symbol: a buffer of fixed size (a column sum)
    has its bytes from the first call on (it had 8 and the sum wrote 32: heap damage)."""
    def f(x):
        return np.exp(x).sum(axis=0)
    g = kiln.hybridize(f, backend="c", dynamic_axes={"x": {0: "batch"}})
    for batch in (0, 3, 0, 5, 1):
        x = _rows(batch)
        onp.testing.assert_allclose(g(x).asnumpy(), f(x).asnumpy(), rtol=1e-5, atol=1e-6)
    for info in _sized(kiln.programs(g)):
        program = info.entry.program
        zero = dict.fromkeys(program.gen.sizes.order, 0)
        from kiln._core.symdim import concrete_value
        assert all(b.size >= concrete_value(c, zero)
                   for b, c in zip(program.arena, program.gen.plan.capacities))
