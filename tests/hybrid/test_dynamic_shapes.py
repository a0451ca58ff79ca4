"""hybridize with symbolic dimensions: one program serves many sizes, and equals eager."""
import warnings

import numpy as onp
import pytest

import kiln
from kiln import autograd, np
from kiln._core.base import KilnError
from kiln.gluon import Trainer, nn, loss as gloss


def _programs(cached):
    return len({id(e) for e in cached.entries.values()})


def _mlp(seed=0):
    onp.random.seed(seed)
    net = nn.HybridSequential()
    net.add(nn.Dense(32, activation="relu"), nn.Dense(16, activation="relu"), nn.Dense(10))
    net.initialize()
    net(np.zeros((2, 20)))
    return net


def _copy_params(src, dst):
    for p, q in zip(src.collect_params().values(), dst.collect_params().values()):
        q.set_data(p.data())


def test_mlp_every_batch_size_one_symbolic_program():
    eager, net = _mlp(), _mlp()
    _copy_params(eager, net)
    net.hybridize(backend="numpy")
    rng = onp.random.RandomState(0)
    for b in list(range(1, 25)) + [0, 64]:
        x = np.array(rng.rand(b, 20).astype("float32"))
        onp.testing.assert_allclose(net(x).asnumpy(), eager(x).asnumpy(), rtol=1e-5,
                                    atol=1e-6)
    cached = net._kiln_cached
    # batch 1 specializes; the second size makes the batch symbolic; the broadcast rule's
    # "is it 1?" guard keeps 1 out of the symbolic program, which serves 0 and 64 too
    assert _programs(cached) <= 2
    (entries,) = cached.policy.programs.values()
    assert "input 0 axis 0 = s0" in entries[0].symbolic.describe()


def test_static_shape_keeps_one_program_per_shape():
    net = _mlp()
    net.hybridize(backend="numpy", static_shape=True)
    for b in (2, 3, 4):
        net(np.ones((b, 20)))
    assert _programs(net._kiln_cached) == 3


def test_dynamic_true_is_symbolic_from_the_first_call():
    net = _mlp()
    net.hybridize(backend="numpy", dynamic=True)
    for b in (2, 3, 4, 9):
        net(np.ones((b, 20)))
    assert _programs(net._kiln_cached) == 1


def test_dynamic_axes_names_and_equal_sizes():
    def f(x, y):
        return (x * 2 + y).sum(axis=1)
    g = kiln.hybridize(f, backend="numpy", dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    rng = onp.random.RandomState(1)
    for b in (3, 5, 8):
        x, y = (np.array(rng.rand(b, 4).astype("float32")) for _ in range(2))
        onp.testing.assert_allclose(g(x, y).asnumpy(), f(x, y).asnumpy(), rtol=1e-6)
    assert _programs(g._cached) == 1
    with pytest.raises(KilnError):
        g(np.ones((3, 4)), np.ones((4, 4)))      # fails to broadcast, as eagerly


def test_a_python_branch_on_a_size_is_guarded():
    def f(x):
        if x.shape[0] > 4:
            return x * 2
        return x - 1
    g = kiln.hybridize(f, backend="numpy", dynamic=True)
    for b in (6, 2, 9, 3, 5, 4):
        x = np.ones((b, 3))
        onp.testing.assert_allclose(g(x).asnumpy(), f(x).asnumpy())
    assert _programs(g._cached) == 2


def test_reshape_and_slicing_of_a_symbolic_size():
    def f(x):
        y = x.reshape(-1, 2, 3)
        return y[:, 1].sum(axis=-1) + y.shape[0]
    g = kiln.hybridize(f, backend="numpy", dynamic=True)
    for b in (2, 4, 1, 8, 0):
        x = np.arange(b * 6, dtype="float32").reshape(b, 6)
        onp.testing.assert_allclose(g(x).asnumpy(), f(x).asnumpy())


def test_training_with_a_last_smaller_batch_matches_eager():
    eager, net = _mlp(), _mlp()
    _copy_params(eager, net)
    net.hybridize(backend="numpy", dynamic_axes={0: {0: "batch"}})
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
    assert _programs(net._kiln_cached) == 1


def test_the_c_backend_makes_one_symbolic_program_once_sizes_vary():
    """Generated C takes run-time sizes (backend/c/sized_program.py): as on NumPy, the
    first call specializes and one C program serves every later batch size."""
    from kiln.backend.c import build
    if not build.available():
        pytest.skip("no C compiler")
    net, eager = _mlp(), _mlp()
    for p, q in zip(eager.collect_params().values(), net.collect_params().values()):
        p.set_data(q.data())
    net.hybridize(backend="c")
    for b in (2, 3, 7, 1, 0, 5):
        x = np.array(onp.random.RandomState(b).rand(b, 20).astype("float32"))
        onp.testing.assert_allclose(net(x).asnumpy(), eager(x).asnumpy(), rtol=1e-5,
                                    atol=1e-6)
    listing = kiln.programs(net)
    assert len(listing) == 2 and len(listing.symbolic) == 1
    assert type(listing.symbolic[0].entry.program).__name__ == "SizedCProgram"
    assert listing.symbolic[0].backend == "c"


def test_explain_and_programs_name_the_symbolic_sizes_and_guards():
    def f(x):
        return x.reshape(x.shape[0] // 2, -1) if x.shape[0] > 2 else x
    report = kiln.explain(f, np.ones((4, 6)), dynamic_axes={"x": {0: "rows"}})
    text = str(report)
    assert "symbolic sizes rows" in text and "rows > 2" in text
    assert "test_dynamic_shapes.py" in text        # the line that forced the guard
    g = kiln.hybridize(f, backend="numpy")
    for b in (4, 6, 8):
        onp.testing.assert_allclose(g(np.ones((b, 6))).asnumpy(), f(np.ones((b, 6))).asnumpy())
    listing = kiln.programs(g)
    assert len(listing) == 2 and len(listing.symbolic) == 1
    assert "2 program(s)" in str(listing) and "s0" in str(listing)


def test_export_after_symbolic_calls_writes_the_latest_sizes(tmp_path):
    net = _mlp()
    net.hybridize(backend="numpy", dynamic=True)
    for b in (3, 5):
        out = net(np.ones((b, 20)))
    sym_file, par_file = net.export(str(tmp_path / "mlp"))
    loaded = nn.SymbolBlock.imports(sym_file, ["data"], par_file)
    onp.testing.assert_allclose(loaded(np.ones((5, 20))).asnumpy(), out.asnumpy(), rtol=1e-5)


def test_fuzzer_size_stage_with_control_flow_over_symbolic_sizes():
    """Fuzz seed 3: a loop and a branch on arrays whose sizes are symbolic ran their
    subgraphs outside the build (SymbolicShapeError); their sizes are pinned now."""
    from kiln.fuzz.compare import compare

    def f(a0):
        v = a0 * 2
        n = np.zeros(())
        while (np.abs(v).sum() > 1) * (n < 5):
            v = v / 2
            n = n + 1
        if v.sum() > 0:
            v = -v
        return v, n
    x = np.array(onp.random.RandomState(3).rand(4, 3).astype("float32"))
    assert not compare(f, [x], backends=("numpy",), grad=False, sizes=True)


def test_a_first_call_at_size_one_leaves_later_sizes_symbolic():
    # x[:, 0] of a whole symbolic axis and a broadcast against a size that is 1 on the
    # first call: the program for batch 1 is pinned to 1 (a size class of its own), and
    # the next size still gets a symbolic program that every later size shares
    def f(x, y):
        return x[:, 0] * 2 - y
    g = kiln.hybridize(f, backend="numpy", dynamic=True)
    rng = onp.random.RandomState(1)
    for b in (1, 5, 3, 7, 2):
        x, y = np.array(rng.rand(b, 3)), np.array(rng.rand(b))
        onp.testing.assert_allclose(g(x, y).asnumpy(), f(x, y).asnumpy())
    info = kiln.programs(g)
    assert len(info) == 2 and not info.refused, info


def test_a_size_the_op_refuses_does_not_stop_symbolic_programs():
    def f(x):
        return np.argmax(x)
    g = kiln.hybridize(f, backend="numpy", dynamic=True)
    for b in (3, 0, 5, 7, 4):
        x = np.ones((b, 2))
        if b == 0:      # eager refuses an empty argmax: so does the compiled function
            with pytest.raises(KilnError):
                g(x)
            continue
        assert int(g(x)) == int(f(x))
    info = kiln.programs(g)
    assert len(info) == 1 and not info.refused, info


def test_batch_norm_training_keeps_the_batch_symbolic():
    net = nn.HybridSequential()
    net.add(nn.Dense(8), nn.BatchNorm(), nn.Dense(3))
    net.initialize()
    net.hybridize(backend="numpy", dynamic_axes={0: {0: "batch"}})
    for b in (4, 6, 9, 2):
        with autograd.record():
            out = net(np.ones((b, 5)) * onp.arange(b).reshape(b, 1))
        out.backward()
    info = kiln.programs(net)
    assert len(info) == 1 and not info.refused, info


def test_indexing_a_whole_symbolic_axis_keeps_its_symbol():
    g = kiln.hybridize(lambda x: x[:, 0] * 2, backend="numpy", dynamic=True)
    for b in (3, 5, 7, 4):
        x = np.array(onp.arange(b * 3, dtype="float32").reshape(b, 3))
        onp.testing.assert_allclose(g(x).asnumpy(), x.asnumpy()[:, 0] * 2)
    assert len(kiln.programs(g)) == 1, kiln.programs(g)


def test_a_symbolic_size_pinned_to_one_broadcasts_in_generated_c():
    # the second call makes y's batch symbolic at 1 (a guard pins it): the C program must
    # broadcast it as a 1, not lay it out as a full axis (wrong values before)
    g = kiln.hybridize(lambda x, y: x - y, backend="c")
    x = onp.arange(6, dtype="float32").reshape(2, 3)
    for c in (2, 1, 1, 2):
        y = (onp.arange(c, dtype="float32").reshape(c, 1) + 1) * 10
        onp.testing.assert_array_equal(g(np.array(x), np.array(y)).asnumpy(), x - y)


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_dropout_in_training_keeps_the_batch_symbolic(backend):
    # the mask is drawn at the traced array's shape: a symbolic batch stays symbolic in
    # the draw (np.random's size took int() of it, so every batch was a program)
    net = nn.HybridSequential()
    net.add(nn.Dense(32), nn.Dropout(0.5))
    net.initialize()
    net.hybridize(backend=backend)
    for b in (8, 5, 9, 1, 7):
        x = np.ones((b, 6))
        with autograd.record():
            y = net(x)
        y.backward()
        kept = net[0](x).asnumpy() * 2
        v = y.asnumpy()
        assert v.shape == (b, 32)
        assert onp.all((v == 0) | onp.isclose(v, kept, rtol=1e-5, atol=1e-6))
    assert len(kiln.programs(net)) == 2, kiln.programs(net)


def test_pinned_sizes_and_unused_arguments_in_generated_c():
    # fuzz seed 29011 #7: every size the output reads is pinned (written as its value),
    # but arguments nothing reads keep their symbols: the program must still be the one
    # that binds symbols (it was a fixed-size one, which then compared symbolic shapes)
    blk = nn.Dense(2, activation="relu", in_units=4)
    blk.initialize()

    def f(a0, a1, a2):
        a0[::2], a0[0][::2]     # (unused: these slices pin a0's sizes)
        return blk(a0.sum(axis=-2, keepdims=True))[1:, ::2].astype("bool")
    g = kiln.hybridize(f, backend="c", dynamic=True)
    a0 = np.ones((4, 4))
    for s1, s2 in (((2, 3), (3, 1)), ((4, 2), (2, 1))):
        a1, a2 = np.ones(s1), np.array(onp.ones(s2, "int32"))
        assert g(a0, a1, a2).shape == f(a0, a1, a2).shape == (0, 1)


def test_sizes_that_varied_in_training_are_symbolic_from_the_first_prediction():
    """The policy compares sizes across modes: a batch that varied while training makes
    the first predict-mode program symbolic, and the build log says why each was made."""
    net, eager = _mlp(), _mlp()
    _copy_params(eager, net)
    net.hybridize(backend="numpy")
    rng = onp.random.RandomState(4)
    for b in (6, 4):
        x = np.array(rng.rand(b, 20).astype("float32"))
        with autograd.record():
            net(x).sum().backward()
    for b in (3, 9, 5):
        x = np.array(rng.rand(b, 20).astype("float32"))
        onp.testing.assert_allclose(net(x).asnumpy(), eager(x).asnumpy(), rtol=1e-5,
                                    atol=1e-6)
    builds = net._kiln_cached.policy.builds
    predict = [b for b in builds if not b.training]
    assert len(predict) == 1 and predict[0].symbolic, [str(b) for b in builds]
    assert [b.why.split(":")[0] for b in builds] == [
        "first call of this kind (structure, dtypes, ranks, mode, gradients)",
        "sizes changed",
        "first call of this kind (structure, dtypes, ranks, mode, gradients)"]


def test_programs_lists_an_eager_fallback():
    def f(x):
        return x * float(x.asnumpy().sum())      # needs a value: runs eagerly
    g = kiln.hybridize(f, backend="numpy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g(np.ones((2, 3)))
    info = kiln.programs(g)
    assert len(info) == 1 and info.programs[0].backend == "eager"
    assert info.programs[0].symbolic is None and info.programs[0].symbolic_dims == {}
    str(info)
