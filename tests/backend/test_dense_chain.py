"""Two small-batch Dense layers compiled as one parallel job (backend/c/dense_chain.py).

Each test checks both that the chain was generated (or, where it must not be, that it was
not) and that the compiled model agrees with eager NumPy arithmetic."""
import shutil
import warnings

import numpy as onp
import pytest
from hypothesis import given, settings, strategies as st

from kiln import np
from kiln.backend.c import build, dense_chain
from kiln.gluon import nn
from conftest import run_standalone_c

pytestmark = pytest.mark.skipif(not build.available(), reason="no C compiler")

ACTIVATIONS = {None: lambda v: v, "relu": lambda v: onp.maximum(v, 0),
               "sigmoid": lambda v: 1 / (1 + onp.exp(-v)), "tanh": onp.tanh}


def compiled(net, x):
    net.hybridize(backend="c")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = net(x)
    entries = list(net._kiln_cached.entries.values())
    assert len(entries) == 1
    return out.asnumpy(), entries[0].program.source


def reference(net, x, activations):
    h = x.asnumpy().astype("float64")
    for layer, act in zip(net, activations):
        h = h @ layer.weight.data().asnumpy().T.astype("float64")
        if layer.bias is not None:
            h = h + layer.bias.data().asnumpy()
        h = ACTIVATIONS[act](h)
    return h


def mlp(widths, activations, rows, k, dtype="float32", bias=True, seed=0):
    net = nn.HybridSequential()
    for w, act in zip(widths, activations):
        net.add(nn.Dense(w, activation=act, use_bias=bias, dtype=dtype))
    net.initialize()
    rng = onp.random.default_rng(seed)
    x = np.array(rng.standard_normal((rows, k)).astype(dtype))
    net(x)
    for p in net.collect_params().values():      # biases away from zero, to be seen
        p.set_data(np.array(rng.standard_normal(p.shape).astype(dtype) * 0.2))
    return net, x


SEED_ACTS = ["relu", "relu", None]


def test_seed_mlp_at_batch_one_is_chained_and_matches_eager():
    net, x = mlp([256, 128, 2], SEED_ACTS, rows=1, k=512)
    out, source = compiled(net, x)
    assert "kiln_chain" in source and "kiln_parallel_ptr(kiln_chain" in source
    onp.testing.assert_allclose(out, reference(net, x, SEED_ACTS), rtol=1e-4, atol=1e-5)


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 7), k=st.integers(1, 300), n1=st.integers(128, 300),
       n2=st.integers(1, 70), acts=st.sampled_from([("relu", "relu"), ("sigmoid", None),
                                                     (None, "tanh"), (None, None)]),
       bias=st.booleans(), threads=st.integers(1, 5), dtype=st.sampled_from(["float32",
                                                                              "float64"]))
def test_random_chains_match_eager(rows, k, n1, n2, acts, bias, threads, dtype):
    # the block count follows the thread count; uneven last blocks included
    net, x = mlp([n1, n2], list(acts), rows, k, dtype=dtype, bias=bias, seed=rows * n1 + k)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dense_chain, "thread_count", lambda: threads)
        out, source = compiled(net, x)
    assert ("kiln_chain" in source) == (rows * n1 * k >= dense_chain.GEMV_PARALLEL_MIN)
    tol = 1e-4 if dtype == "float32" else 1e-10
    onp.testing.assert_allclose(out, reference(net, x, acts), rtol=tol, atol=tol)


def test_no_chain_where_it_does_not_apply():
    # batch 8 goes to BLAS; a layer too small for the pool runs alone
    for rows, widths, k in ((8, [256, 128], 512), (1, [64, 64], 64)):
        net, x = mlp(widths, ["relu", None], rows, k)
        out, source = compiled(net, x)
        assert "kiln_chain" not in source
        onp.testing.assert_allclose(out, reference(net, x, ["relu", None]), rtol=1e-4,
                                    atol=1e-5)


class SkipNet(nn.HybridBlock):
    """The second Dense reads the first's output, and the output is also used after."""

    def __init__(self):
        super().__init__()
        self.a = nn.Dense(256, activation="relu")
        self.b = nn.Dense(256)

    def forward(self, x):
        h = self.a(x)
        return self.b(h) + h


def test_first_layer_output_used_after_the_chain_is_complete():
    net = SkipNet()
    net.initialize()
    x = np.array(onp.random.default_rng(1).standard_normal((2, 300)).astype("float32"))
    expected = net(x).asnumpy()
    out, source = compiled(net, x)
    assert "kiln_chain" in source
    onp.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


def test_chain_without_the_runtime_runs_its_blocks_in_order(monkeypatch):
    # standalone C (kiln build-c) has no thread pool: kiln_parallel_ptr stays NULL
    net, x = mlp([256, 128, 2], SEED_ACTS, rows=1, k=512)
    _, source = compiled(net, x)
    assert "else for (int64_t b = 0; b < " in source
    from kiln.backend.c import program as program_module
    monkeypatch.setattr(program_module, "runtime", lambda: None)
    fresh, _ = mlp([256, 128, 2], SEED_ACTS, rows=1, k=512)
    for a, b in zip(fresh.collect_params().values(), net.collect_params().values()):
        a.set_data(b.data())
    out, source = compiled(fresh, x)
    assert "kiln_chain" in source
    onp.testing.assert_allclose(out, reference(net, x, SEED_ACTS), rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_standalone_c_export_runs_the_chain_without_a_pool(tmp_path):
    net, x = mlp([256, 128, 2], SEED_ACTS, rows=1, k=512)
    net.hybridize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net(x)
    source, out = run_standalone_c(net, x, tmp_path, (1, 2))
    assert "kiln_chain" in source
    onp.testing.assert_allclose(out, reference(net, x, SEED_ACTS), rtol=1e-4, atol=1e-5)


def test_a_compiled_training_step_with_a_chained_forward_matches_eager():
    import kiln
    from kiln import gluon
    from kiln.fit import make_step

    # a linear first layer: with a ReLU, the training graph splits the first layer's step
    # (the ReLU's gradient reads its input) and no chain forms
    def twin():
        onp.random.seed(0)
        net, _ = mlp([256, 10], [None, None], rows=2, k=200)
        return net, gluon.Trainer(net.collect_params(), "sgd",
                                  {"learning_rate": 0.05, "momentum": 0.9})
    (a, ta), (b, tb) = twin(), twin()
    for pa, pb in zip(a.collect_params().values(), b.collect_params().values()):
        pb.set_data(pa.data())
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    eager = make_step(a, loss, ta, compiled=False)
    compiled = kiln.hybridize(make_step(b, loss, tb, compiled=False), backend="c")
    rng = onp.random.default_rng(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(10):
            x = np.array(rng.standard_normal((2, 200)).astype("float32"))
            y = np.array(rng.integers(0, 10, size=2).astype("float32"))
            onp.testing.assert_allclose(compiled(x, y).asnumpy(), eager(x, y).asnumpy(),
                                        rtol=1e-4, atol=1e-5)
    sources = [e.program.source for e in compiled._cached.entries.values()]
    assert any("kiln_chain" in src for src in sources)
    for pa, pb in zip(a.collect_params().values(), b.collect_params().values()):
        onp.testing.assert_allclose(pb.data().asnumpy(), pa.data().asnumpy(), rtol=1e-4,
                                    atol=1e-5)
