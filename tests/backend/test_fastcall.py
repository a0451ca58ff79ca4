"""The C fast path of a CProgram call, and its hand-over to the Python path."""
import gc
import os
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import numpy as onp
import pytest

from kiln import np
from kiln._core import trace
from kiln.backend.c import build
from kiln.base import KilnError
from kiln.gluon import nn

pytestmark = pytest.mark.skipif(not build.available(), reason="no C compiler")


def _net():
    net = nn.HybridSequential()
    net.add(nn.Dense(16, activation="relu"), nn.Dense(3))
    net.initialize()
    net.hybridize(backend="c")
    return net


def _program(net):
    return next(iter(net._kiln_cached.entries.values())).program


def _eager(net, x):
    h = x
    for layer in net:
        h = h @ layer.weight.data().asnumpy().T + layer.bias.data().asnumpy()
        if layer is net[0]:
            h = onp.maximum(h, 0)
    return h


def test_fast_path_is_used_and_matches_eager():
    net = _net()
    x = onp.random.rand(4, 10).astype("float32")
    out = net(np.array(x)).asnumpy()
    prog = _program(net)
    if prog._caller is None:
        pytest.skip("the fast-call extension could not be built here (no Python headers)")
    onp.testing.assert_allclose(out, _eager(net, x), rtol=1e-5, atol=1e-6)
    params = [p.data()._data for p in net.collect_params().values()]
    assert prog._caller([x], params) is not None


def test_declined_inputs_take_the_python_path_and_parameters_stay_consistent():
    net = _net()
    x = onp.random.rand(4, 10).astype("float32")
    net(np.array(x))
    prog = _program(net)
    params = [p.data()._data for p in net.collect_params().values()]
    other = [p * 2 for p in params]
    want = prog([x], params)[0]
    # non-contiguous input and other parameters: the Python path binds `other`
    wide = onp.zeros((4, 20), "float32")
    wide[:, ::2] = x
    got_other = prog([wide[:, ::2]], other)[0]
    assert not onp.allclose(got_other, want)
    # back on the fast path with the first parameters: they must be bound again
    onp.testing.assert_array_equal(prog([x], params)[0], want)
    # and back on the Python path with `other`, which the fast path replaced in the table
    onp.testing.assert_array_equal(prog([wide[:, ::2]], other)[0], got_other)
    onp.testing.assert_array_equal(prog([x], other)[0], got_other)


def test_inputs_alternating_between_the_two_paths_are_each_read():
    # the fast path points the table at its input, the Python path copies into a buffer
    net = _net()
    rng = onp.random.default_rng(3)
    xs = [rng.random((4, 10)).astype("float32") for _ in range(4)]
    net(np.array(xs[0]))
    prog = _program(net)
    params = [p.data()._data for p in net.collect_params().values()]
    for k, x in enumerate(xs):
        fast = prog([x], params)[0]
        wide = onp.zeros((4, 20), "float32")
        wide[:, ::2] = xs[-1 - k]
        declined = prog([wide[:, ::2]], params)[0]       # non-contiguous: Python path
        onp.testing.assert_allclose(fast, _eager(net, x), rtol=1e-5, atol=1e-6)
        onp.testing.assert_allclose(declined, _eager(net, xs[-1 - k]), rtol=1e-5, atol=1e-6)


def test_parameter_changes_are_seen():
    net = _net()
    x = np.array(onp.random.rand(2, 10).astype("float32"))
    before = net(x).asnumpy()
    w = net[1].weight
    w.set_data(w.data() * 0 + 1)          # a new array object
    after = net(x).asnumpy()
    onp.testing.assert_allclose(after, _eager(net, x.asnumpy()), rtol=1e-5, atol=1e-6)
    w.data()._data[...] = 2               # the same object, changed in place
    onp.testing.assert_allclose(net(x).asnumpy(), _eager(net, x.asnumpy()), rtol=1e-5,
                                atol=1e-6)
    assert not onp.allclose(before, after)


def test_wrong_inputs_raise_clear_errors():
    net = _net()
    x = onp.random.rand(4, 10).astype("float32")
    net(np.array(x))
    prog = _program(net)
    params = [p.data()._data for p in net.collect_params().values()]
    with pytest.raises(KilnError, match="shape"):
        prog([x.astype("float64")], params)
    with pytest.raises(KilnError, match="shape"):
        prog([x[:3]], params)
    with pytest.raises(KilnError, match="expected 1 inputs"):
        prog([x, x], params)
    with pytest.raises(KilnError, match="NumPy array"):
        prog([x.tolist()], params)


def test_threads_share_a_program():
    net = _net()
    xs = [onp.random.rand(8, 10).astype("float32") for _ in range(4)]
    net(np.array(xs[0]))
    want = [_eager(net, x) for x in xs]
    errors = []

    def work(k):
        try:
            for _ in range(200):
                got = net(np.array(xs[k])).asnumpy()
                onp.testing.assert_allclose(got, want[k], rtol=1e-5, atol=1e-6)
        except Exception as exc:     # reported below: pytest does not see thread failures
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_without_the_extension_the_python_path_serves(tmp_path):
    script = textwrap.dedent("""
        import numpy as onp, kiln
        from kiln import np
        f = kiln.hybridize(lambda x: np.tanh(x) * 2, backend="c")
        x = onp.linspace(-1, 1, 7).astype("float32")
        prog = None
        out = f(np.array(x)).asnumpy()
        prog = next(iter(f._cached.entries.values())).program
        print(type(prog).__name__, prog._caller, float(abs(out - onp.tanh(x) * 2).max()))
    """)
    env = dict(os.environ, KILN_NO_FASTCALL="1", KILN_CACHE_DIR=str(tmp_path))
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    kind, caller, err = res.stdout.split()
    assert (kind, caller) == ("CProgram", "None") and float(err) < 1e-6


def _dispatched_net():
    """A hybridized net called once, its input and its C dispatcher (or a skip)."""
    net = _net()
    x = onp.random.rand(4, 10).astype("float32")
    net(np.array(x))
    dispatch = net._kiln_cached.dispatch
    if dispatch is None:
        pytest.skip("the fast-call extension could not be built here")
    return net, x, dispatch


def test_the_dispatcher_serves_whole_block_calls_and_declines_the_rest():
    from kiln import autograd
    net, x, dispatch = _dispatched_net()
    out = dispatch(np.array(x))
    assert type(out) is np.ndarray
    onp.testing.assert_allclose(out.asnumpy(), _eager(net, x), rtol=1e-5, atol=1e-6)
    assert dispatch(np.array(x[:2])) is NotImplemented          # no entry for this shape
    assert dispatch(x) is NotImplemented                          # not a kiln array
    with autograd.record():
        assert dispatch(np.array(x)) is NotImplemented            # gradients need the tape
        y = net(np.array(x))
    onp.testing.assert_allclose(y.asnumpy(), _eager(net, x), rtol=1e-5, atol=1e-6)
    # other shapes and parameters changed by set_data go through it correctly
    onp.testing.assert_allclose(net(np.array(x[:2])).asnumpy(), _eager(net, x[:2]),
                                rtol=1e-5, atol=1e-6)
    net[0].weight.set_data(net[0].weight.data() * 3)
    onp.testing.assert_allclose(net(np.array(x)).asnumpy(), _eager(net, x), rtol=1e-5,
                                atol=1e-6)
    wide = onp.zeros((4, 20), "float32")
    wide[:, ::2] = x
    onp.testing.assert_allclose(net(np.array(wide)[:, ::2]).asnumpy(), _eager(net, x),
                                rtol=1e-5, atol=1e-6)


def test_arrays_the_dispatcher_makes_are_like_wrapped_ones():
    from kiln._core.ndarray import ndarray
    net, x, dispatch = _dispatched_net()
    made, wrapped = dispatch(np.array(x)), ndarray._wrap(onp.zeros(2))
    slots = [s for s in ndarray.__slots__ if s not in ("_data", "__weakref__")]
    assert sorted(name for name, _ in ndarray._FRESH) == sorted(slots)
    for name in slots:
        assert getattr(made, name) == getattr(wrapped, name)
    made[0] = 1.0                      # an ordinary, writable, trackable kiln array
    made.attach_grad()
    assert made.grad is not None


def _block_call_installed():
    from kiln.gluon.block import HybridBlock
    return type(HybridBlock.__dict__["__call__"]).__name__ == "instancemethod"


def test_block_call_in_c_serves_hybridized_blocks_without_their_other_paths(monkeypatch):
    net, x, _ = _dispatched_net()
    assert _block_call_installed()
    cached = net._kiln_cached

    def not_reached(*args):
        raise AssertionError("the dispatcher should have served this call")
    monkeypatch.setattr(cached, "call_entry", not_reached)
    out = net(np.array(x))
    onp.testing.assert_allclose(out.asnumpy(), _eager(net, x), rtol=1e-5, atol=1e-6)
    # the Python version of the same method agrees, through the same dispatcher
    onp.testing.assert_allclose(net._call_in_python(np.array(x)).asnumpy(), out.asnumpy())


def test_block_call_in_c_takes_the_python_paths_where_it_must():
    net, x, _ = _dispatched_net()
    assert _block_call_installed()
    xa = np.array(x)
    seen = []
    handle = net.register_forward_hook(lambda block, args, out: seen.append(out.shape))
    assert net(xa).shape == (4, 3) and seen == [(4, 3)]          # hooks run
    handle.detach()
    pre = net.register_forward_pre_hook(lambda block, args: seen.append("pre"))
    net(xa)
    assert seen[-1] == "pre"
    pre.detach()
    with pytest.raises(TypeError):
        net(xa, unexpected=1)                   # keyword arguments reach forward


class _Counting(nn.HybridBlock):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, in_units=10)
        self.runs = 0

    def forward(self, x):
        self.runs += 1          # Python side effect: once per trace, or per eager call
        return self.dense(x)


def test_block_call_in_c_runs_forward_again_once_hybridize_is_turned_off():
    _dispatched_net()
    assert _block_call_installed()
    block = _Counting()
    block.initialize()
    block.hybridize(backend="c")
    x = np.array(onp.ones((2, 10), "float32"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            block(x)
    assert block.runs == 1 and block._kiln_cached.dispatch is not None
    with trace.body_of(block):                  # re-entered while hybridize runs it: eager
        block(x)
    assert block.runs == 2
    block.hybridize(False)
    block(x)
    block(x)
    assert block.runs == 4


class _Outer(nn.HybridBlock):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.scale = nn.Dense(3, in_units=3)

    def forward(self, x):
        return self.scale(self.inner(x)) * 2


def test_a_hybridized_block_inside_a_trace_is_traced_not_dispatched():
    inner, x, _ = _dispatched_net()
    assert _block_call_installed()
    outer = _Outer(inner)
    outer.scale.initialize()
    outer.hybridize(backend="c")
    out = outer(np.array(x)).asnumpy()
    w, b = outer.scale.weight.data().asnumpy(), outer.scale.bias.data().asnumpy()
    onp.testing.assert_allclose(out, (_eager(inner, x) @ w.T + b) * 2, rtol=1e-5, atol=1e-5)
    graph = next(iter(outer._kiln_cached.entries.values())).program.graph
    assert sum(n.op == "matmul" for n in graph.nodes) == 3    # the inner block's two too


def test_a_dispatcher_outliving_its_programs_declines_instead_of_reading_freed_memory():
    # the CProgram owns the table and buffers; a Caller holds it only while it runs
    script = textwrap.dedent("""
        import gc, warnings
        import numpy as onp
        from kiln import np
        from kiln.gluon import nn
        warnings.simplefilter("ignore")
        net = nn.HybridSequential(); net.add(nn.Dense(64, activation="relu"))
        net.initialize(); net.hybridize(backend="c")
        x = np.array(onp.random.rand(8, 32).astype("float32"))
        net(x); net(x)
        d = net._kiln_cached.dispatch
        assert d is not None
        del net.__dict__["_kiln_cached"]
        gc.collect()
        junk = [onp.full(1 << 16, 7.0, "float32") for _ in range(8)]
        print(d(x) is NotImplemented, all((j == 7).all() for j in junk))
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["True", "True"]


def test_block_call_in_c_keeps_cooperative_calls_and_overrides():
    _dispatched_net()
    assert _block_call_installed()
    from kiln.gluon.block import Block, HybridBlock
    seen = []

    class Logging(Block):
        def __call__(self, *args, **kwargs):
            seen.append("mixin")
            return super().__call__(*args, **kwargs)

    class Net(HybridBlock, Logging):
        def __init__(self):
            super().__init__()
            self.d = nn.Dense(2, in_units=3)

        def forward(self, x):
            return self.d(x)

        def _call_undispatched(self, args, kwargs):
            seen.append("override")
            return super()._call_undispatched(args, kwargs)

    net = Net()
    net.initialize()
    x = np.array(onp.ones((1, 3), "float32"))
    expected = x.asnumpy() @ net.d.weight.data().asnumpy().T + net.d.bias.data().asnumpy()
    onp.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-6)
    assert seen == ["override", "mixin"]


def test_block_call_is_installed_once_and_a_later_replacement_stays():
    _dispatched_net()
    from kiln.gluon.block import HybridBlock
    installed = HybridBlock.__dict__["__call__"]
    try:
        HybridBlock.__call__ = HybridBlock._call_in_python
        _dispatched_net()                       # a new dispatcher: nothing reinstalled
        assert HybridBlock.__dict__["__call__"] is HybridBlock._call_in_python
    finally:
        HybridBlock.__call__ = installed


def test_caller_holds_its_arrays_when_the_lists_change_while_it_waits():
    net = _net()
    x = onp.random.rand(4, 10).astype("float32")
    net(np.array(x))
    prog = _program(net)
    if prog._caller is None:
        pytest.skip("the fast-call extension could not be built here")
    params = [p.data()._data.copy() for p in net.collect_params().values()]
    inputs = [x.copy()]
    results = []
    with prog._caller:                  # the other thread waits for the lock without the GIL
        t = threading.Thread(target=lambda: results.append(prog._caller(inputs, params)))
        t.start()
        time.sleep(0.2)
        inputs.clear()
        params.clear()
        gc.collect()
    t.join()
    onp.testing.assert_allclose(results[0][0], _eager(net, x), rtol=1e-5, atol=1e-6)
