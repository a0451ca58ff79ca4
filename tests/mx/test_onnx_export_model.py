"""mx.onnx.export_model (kiln/mx/onnx.py): MXNet 1.9's signature, on files MXNet 1.9.1 itself
exported (tests/fixtures/mxnet) and on a Symbol with a dict of parameters."""
import os

import numpy as onp
import pytest

import kiln
import kiln.onnx
from kiln import nd, sym
from paths import FIXTURES

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
HERE = os.path.join(FIXTURES, "mxnet")


def _run(path, x):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_mxnet_files_export_and_match_mxnet(tmp_path, name):
    io = onp.load(os.path.join(HERE, f"{name}-io.npz"))
    path = kiln.onnx.export_model(os.path.join(HERE, f"{name}-symbol.json"),
                                  os.path.join(HERE, f"{name}-0000.params"), [io["x"].shape],
                                  onnx_file_path=str(tmp_path / f"{name}.onnx"))
    onp.testing.assert_allclose(_run(path, io["x"]), io["y"], rtol=1e-5, atol=1e-6)


def test_symbol_and_dict_of_parameters(tmp_path):
    data = sym.var("data")
    out = sym.Activation(sym.FullyConnected(data, num_hidden=3, name="fc"), act_type="tanh")
    w = onp.random.default_rng(0).normal(size=(3, 4)).astype("float32")
    params = {"arg:fc_weight": nd.array(w), "arg:fc_bias": nd.array([0.1, 0.2, 0.3])}
    path = kiln.onnx.export_model(out, params, [(2, 4)], onnx_file_path=str(tmp_path / "s.onnx"))
    x = onp.ones((2, 4), "float32")
    onp.testing.assert_allclose(_run(path, x), onp.tanh(x @ w.T + [0.1, 0.2, 0.3]), rtol=1e-5)
    with pytest.raises(kiln.KilnError, match="static shapes"):
        kiln.onnx.export_model(out, params, [(2, 4)], dynamic=True)
    with pytest.raises(kiln.KilnError, match="inputs are"):
        kiln.onnx.export_model(out, params, [(2, 4), (2, 4)])
