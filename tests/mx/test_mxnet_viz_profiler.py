"""mx.viz (print_summary against MXNet 1.9.1's table, plot_network) and mx.profiler."""
import contextlib
import io
import json
import os

import numpy as np
import pytest

from mx_alias_fixture import mx  # noqa: F401  (the fixture)
from kiln.base import KilnError
from paths import FIXTURES

FIXTURES = os.path.join(FIXTURES, "mxnet_infra")


def summary_net(mx):
    data = mx.sym.var("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv1")
    net = mx.sym.BatchNorm(net, name="bn1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    net = mx.sym.Flatten(net, name="flat")
    left = mx.sym.FullyConnected(net, num_hidden=10, name="fc1")
    right = mx.sym.FullyConnected(net, num_hidden=10, no_bias=True, name="fc2")
    net = mx.sym.elemwise_add(left, right, name="sum")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def test_print_summary_equals_mxnets(mx):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        total = mx.viz.print_summary(summary_net(mx), shape={"data": (1, 3, 8, 8)})
    with open(os.path.join(FIXTURES, "viz_summary.txt")) as f:
        expected = f.read()
    assert buf.getvalue() == expected and total == 850


def test_print_summary_errors(mx):
    with pytest.raises(KilnError, match="expected a Symbol"):
        mx.viz.print_summary("net")
    with pytest.raises(KilnError):
        mx.viz.print_summary(summary_net(mx), shape={"other": (1, 3)})


def test_plot_network(mx, monkeypatch):
    pytest.importorskip("graphviz")
    dot = mx.viz.plot_network(summary_net(mx), shape={"data": (1, 3, 8, 8)})
    src = dot.source
    assert "conv1 -> data" in src and 'label="4x6x6"' in src and "fc1_weight" not in src
    shown = mx.viz.plot_network(summary_net(mx), hide_weights=False).source
    assert "fc1_weight" in shown
    monkeypatch.setitem(__import__("sys").modules, "graphviz", None)
    with pytest.raises(KilnError, match="kiln\\[viz\\]"):
        mx.viz.plot_network(summary_net(mx))


def test_profiler_times_eager_ops(mx, tmp_path):
    from kiln.ops.registry import REGISTRY
    impl = REGISTRY["matmul"].impl
    mx.profiler.set_config(profile_all=True, aggregate_stats=True,
                           filename=str(tmp_path / "trace.json"))
    mx.profiler.dumps(reset=True)
    mx.profiler.set_state("run")
    a = mx.np.ones((8, 8))
    b = mx.np.dot(a, a)
    mx.profiler.pause()
    mx.np.dot(a, a)                 # not counted
    mx.profiler.resume()
    domain = mx.profiler.Domain("mine")
    with domain.new_task("step"):
        b = b + 1
    counter = mx.profiler.Counter(domain, "seen", 1)
    counter += 2
    mx.profiler.Marker(domain, "here").mark()
    mx.profiler.set_state("stop")
    assert REGISTRY["matmul"].impl is impl          # the hook is gone
    np.testing.assert_allclose(b.asnumpy(), 9.0)
    stats = json.loads(mx.profiler.dumps(format="json"))["Time"]
    assert stats["operator"]["matmul"]["Count"] == 1 and stats["operator"]["add"]["Count"] >= 1
    assert stats["mine"]["step"]["Count"] == 1 and counter.value == 3
    table = mx.profiler.dumps(reset=True)
    assert "matmul" in table and "eager kernel time" in table
    mx.profiler.dump()
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    assert {"matmul", "step", "seen", "here"} <= {e["name"] for e in events}
    assert mx.profiler.dumps(format="json") == '{"Time": {}, "Unit": {"Time": "ms"}}'
    with pytest.raises(KilnError, match="unknown option"):
        mx.profiler.set_config(profile_everything=True)


def test_profiler_times_hybridized_block_calls(mx):
    from mxnet import gluon
    from kiln.gluon.block import HybridBlock
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(4, in_units=3), gluon.nn.Activation("relu"))
    net.initialize()
    net.hybridize()
    x = mx.np.ones((2, 3))
    expected = net(x).asnumpy()
    call = HybridBlock.__dict__["__call__"]   # (kiln's C dispatcher once the first ran)
    mx.profiler.set_config(aggregate_stats=True)
    mx.profiler.dumps(reset=True)
    mx.profiler.set_state("run")
    for _ in range(3):
        np.testing.assert_allclose(net(x).asnumpy(), expected)
    mx.profiler.set_state("stop")
    stats = json.loads(mx.profiler.dumps(format="json", reset=True))["Time"]
    assert stats["hybridized block"]["HybridSequential"]["Count"] == 3
    assert HybridBlock.__dict__["__call__"] is call      # restored
