"""gluon.model_zoo.vision AlexNet, DenseNet, Inception3, MobileNet v1/v2, SqueezeNet: the
parameter names and shapes MXNet 1.9.1's save_parameters writes (so its pretrained files
load), its output shapes, and its outputs for the same parameter values
(tests/fixtures/mxnet_infra/make_model_zoo_fixture.py records them with real MXNet)."""
import json
import os

import numpy as onp
import pytest

import kiln
from kiln import np
from kiln.gluon.model_zoo import vision
from kiln.gluon.model_zoo.model_store import short_hash
from paths import FIXTURES

FIXTURE = os.path.join(FIXTURES, "mxnet_infra",
                       "model_zoo_imagenet_nets.json")
with open(FIXTURE) as f:
    MXNET = json.load(f)


def pattern(k, shape):
    size = int(onp.prod(shape))
    values = onp.sin(0.37 * onp.arange(size) + k).reshape(shape)
    if len(shape) > 1:
        return (values / onp.sqrt(onp.prod(shape[1:]))).astype("float32")
    return (1.0 + 0.1 * values).astype("float32")


def image(size):
    return onp.cos(0.01 * onp.arange(3 * size * size)).reshape(1, 3, size, size).astype(
        "float32")


@pytest.mark.parametrize("name", sorted(MXNET))
def test_names_shapes_and_outputs_are_mxnets(name):
    want = MXNET[name]
    net = vision.get_model(name, classes=10)
    net.initialize()
    size = want["size"]
    out = net(np.zeros((1, 3, size, size)))
    params = net.collect_params()
    assert [[k, list(p.shape)] for k, p in params.items()] == want["params"]
    assert list(out.shape) == want["output"]
    assert short_hash(name) and callable(vision.get_model)
    if "logits" not in want:
        return
    for k, (pname, p) in enumerate(sorted(params.items())):
        p.set_data(np.array(pattern(k, p.shape)))
    onp.testing.assert_allclose(net(np.array(image(size))).asnumpy(), want["logits"],
                                rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("name", ["mobilenet_v2_0_25", "squeezenet1_1"])
def test_hybridized_equals_eager_and_files_round_trip(name, tmp_path):
    net = vision.get_model(name, classes=4)
    net.initialize(kiln.init.Xavier())
    x = np.array(onp.random.RandomState(0).rand(2, 3, 224, 224).astype(onp.float32))
    eager = net(x).asnumpy()
    path = str(tmp_path / "net.params")
    net.save_parameters(path)
    net.hybridize()
    onp.testing.assert_allclose(net(x).asnumpy(), eager, rtol=1e-4, atol=1e-5)
    again = vision.get_model(name, classes=4)
    again.load_parameters(path)
    onp.testing.assert_allclose(again(x).asnumpy(), eager, rtol=1e-5, atol=1e-6)


def test_unknown_model_and_version():
    with pytest.raises(kiln.KilnError, match="available"):
        vision.get_model("lenet")
    with pytest.raises(ValueError, match="1.0"):
        vision.SqueezeNet("2.0")
