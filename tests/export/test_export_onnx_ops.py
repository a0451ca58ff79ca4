"""ONNX lowerings beyond the layer models: softmax compositions, concat, slice, where,
comparisons, broadcast, take, cast, argmax, full; and generic `windows` (no Conv match)."""
import numpy as onp
import pytest

import kiln
from kiln import np, npx
from kiln.gluon import nn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
import kiln.onnx  # noqa: E402
from kiln.export import onnx as onnx_export  # noqa: E402
from kiln.graph.passes import expand_heavy  # noqa: E402


class Mixed(nn.HybridBlock):
    def forward(self, x):
        y = npx.log_softmax(x, axis=-1) + npx.softmax(x)
        z = np.concatenate([y, x[:, 1:3]], axis=1)
        w = np.where(z > 0, z, np.zeros_like(z)) + np.broadcast_to(np.array([1.0]), z.shape)
        idx = np.argmax(w, axis=1)
        t = np.take(x, np.array([0, 2, 1]), axis=1)
        return (w.astype("float64").sum(axis=1), idx, t * (x[:, :3] <= 0.5),
                np.full((2,), 3.0), np.exp(x).max(axis=0))


def _run(net, x, path):
    kiln.onnx.export(net, [np.array(x)], path)
    onnx.checker.check_model(onnx.load(path))
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(
        None, {"data": x})


def test_mixed_ops_match_eager(tmp_path):
    net = Mixed()
    x = onp.random.default_rng(0).normal(size=(4, 5)).astype("float32")
    want = net(np.array(x))
    got = _run(net, x, str(tmp_path / "m.onnx"))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        onp.testing.assert_allclose(g, w.asnumpy(), rtol=1e-5, atol=1e-6)


def test_windows_without_pattern_exports_generically(tmp_path, monkeypatch):
    net = nn.HybridSequential()
    net.add(nn.Conv2D(3, 3, padding=1, strides=2), nn.MaxPool2D(2, padding=1))
    net.initialize()
    x = onp.random.default_rng(1).normal(size=(1, 2, 7, 7)).astype("float32")
    want = net(np.array(x)).asnumpy()
    monkeypatch.setattr(onnx_export, "find_patterns", lambda graph: {})
    # conv and pool have ONNX ops of their own; expand them to reach the windows lowering
    full = expand_heavy.expand_heavy_ops
    monkeypatch.setattr(expand_heavy, "expand_heavy_ops", lambda graph, keep=None: full(graph))
    (got,) = _run(net, x, str(tmp_path / "g.onnx"))
    types = {n.op_type for n in onnx.load(str(tmp_path / "g.onnx")).graph.node}
    assert "Conv" not in types and "Pad" in types
    onp.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_unsupported_op_is_a_clear_error(tmp_path):
    class Scatter(nn.HybridBlock):
        def forward(self, x):
            y = x * 1          # (writing x itself is refused before ONNX is reached)
            y[0, 0] = 1.0
            return y * 2
    with pytest.raises(kiln.KilnError, match="ONNX"):
        kiln.onnx.export(Scatter(), [np.zeros((2, 2))], str(tmp_path / "s.onnx"))


class Special(nn.HybridBlock):
    def forward(self, x):
        return (np.log1p(np.abs(x)) + np.expm1(x), np.arcsinh(x) + np.arctanh(x * 0.5),
                np.arccosh(np.abs(x) + 1))


def test_log1p_expm1_and_inverse_hyperbolics_export(tmp_path):
    net = Special()
    x = onp.random.default_rng(1).normal(size=(4, 5)).astype("float32")
    for g, w in zip(_run(net, x, str(tmp_path / "s.onnx")), net(np.array(x))):
        onp.testing.assert_allclose(g, w.asnumpy(), rtol=1e-5, atol=1e-6)
