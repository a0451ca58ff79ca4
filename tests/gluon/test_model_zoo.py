"""gluon.model_zoo.vision: the networks have MXNet's layout, so MXNet's pretrained files load.

tests/fixtures/mxnet/model_zoo_params.json lists every (name, shape) that MXNet 1.9.1's
`save_parameters` wrote for these models (built with classes=10, run on a 64x64 input)."""
import json
import os

import numpy as onp
import pytest

import kiln
from kiln import autograd
from kiln import np
from kiln.gluon.model_zoo import vision
from kiln.gluon.model_zoo.model_store import get_model_file
from paths import FIXTURES

FIXTURE = os.path.join(FIXTURES, "mxnet", "model_zoo_params.json")


@pytest.fixture(scope="module")
def mxnet_params():
    with open(FIXTURE) as f:
        return json.load(f)


@pytest.mark.parametrize("name", ["resnet18_v1", "resnet50_v1", "resnet18_v2", "resnet50_v2",
                                  "vgg11", "vgg11_bn"])
def test_parameter_names_and_shapes_are_mxnets(name, mxnet_params, tmp_path):
    net = vision.get_model(name, classes=10)
    net.initialize()
    size = 64 if name.startswith("vgg") else 32  # VGG's first Dense sees 512 * 2 * 2 at 64
    net(np.zeros((1, 3, size, size)))
    got = {k: list(p.shape) for k, p in net.collect_params().items()}
    assert got == dict((k, s) for k, s in mxnet_params[name])
    if "50" in name:
        return
    # a file written with those names (as MXNet's are) loads into a fresh network
    path = str(tmp_path / f"{name}.params")
    net.save_parameters(path)
    again = vision.get_model(name, classes=10)
    again.load_parameters(path)
    x = np.array(onp.random.RandomState(0).rand(2, 3, size, size).astype(onp.float32))
    onp.testing.assert_allclose(again(x).asnumpy(), net(x).asnumpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["v1", "v2"])
def test_hybridized_equals_eager_forward_and_backward(name):
    # the zoo's classes with small stages: same code, quick to compile
    if name == "v1":
        net = vision.ResNetV1(vision.BottleneckV1, [1, 1], [8, 16, 32], classes=5,
                              thumbnail=True)
    else:
        net = vision.ResNetV2(vision.BasicBlockV2, [1, 1], [8, 8, 16], classes=5,
                              thumbnail=True)
    net.initialize(kiln.init.Xavier())
    x = np.array(onp.random.RandomState(1).rand(2, 3, 16, 16).astype(onp.float32))

    def run():  # training mode: BatchNorm uses the batch's statistics
        with autograd.record():
            out = net(x)
            loss = (out ** 2).sum()
        loss.backward()
        w = net.features[0].weight if name.endswith("v1") else net.features[1].weight
        return out.asnumpy(), w.grad().asnumpy().copy()

    eager_out, eager_grad = run()
    net.hybridize()
    out, grad = run()
    # training-mode BatchNorm over few values per channel magnifies float rounding
    onp.testing.assert_allclose(out, eager_out, rtol=1e-4, atol=1e-5)
    onp.testing.assert_allclose(grad, eager_grad, rtol=1e-3, atol=1e-5)


def test_resnet_block_matches_torch():
    torch = pytest.importorskip("torch")
    net = vision.BasicBlockV2(8, 2, downsample=True, in_channels=4)
    net.initialize(kiln.init.Xavier())
    x = onp.random.RandomState(2).rand(2, 4, 6, 6).astype(onp.float32)
    out = net(np.array(x)).asnumpy()
    conv = lambda w, t, s, p: torch.nn.functional.conv2d(t, torch.tensor(w.data().asnumpy()),
                                                         stride=s, padding=p)
    bn = lambda t, eps=1e-5: t / (1 + eps) ** 0.5  # fresh running stats: mean 0, var 1
    t = torch.tensor(x)
    pre = torch.relu(bn(t))
    body = conv(net.conv2.weight, torch.relu(bn(conv(net.conv1.weight, pre, 2, 1))), 1, 1)
    ref = body + conv(net.downsample.weight, pre, 2, 0)
    onp.testing.assert_allclose(out, ref.numpy(), rtol=1e-5, atol=1e-5)


def test_offline_missing_file_names_file_and_folder(tmp_path, monkeypatch):
    from kiln.gluon import utils
    def offline(*args, **kwargs):
        raise kiln.base.KilnError("no network")
    monkeypatch.setattr(utils, "download", offline)
    with pytest.raises(kiln.base.KilnError) as err:
        get_model_file("resnet18_v2", root=str(tmp_path))
    assert "resnet18_v2-a81db45f.params" in str(err.value) and str(tmp_path) in str(err.value)
    with pytest.raises(kiln.base.KilnError, match="available"):
        vision.get_model("alexnet_v9")


def test_pretrained_loads_a_stand_in_when_verification_is_off(tmp_path, monkeypatch):
    src = vision.resnet18_v2(classes=1000)
    src.initialize()
    src(np.zeros((1, 3, 32, 32)))
    src.save_parameters(str(tmp_path / "resnet18_v2-a81db45f.params"))
    monkeypatch.setenv("KILN_DATASET_VERIFY", "0")
    net = vision.resnet18_v2(pretrained=True, root=str(tmp_path))
    x = np.ones((1, 3, 32, 32))
    onp.testing.assert_array_equal(net(x).asnumpy(), src(x).asnumpy())


def test_params_files_have_their_own_size_cap(tmp_path, monkeypatch):
    """MXNet's VGG-16/19 files (528/548 MiB) exceed the symbol-file cap of 256 MiB; the
    params reader has its own, larger one."""
    from kiln.export import mxnet_params, symbol
    net = vision.ResNetV2(vision.BasicBlockV2, [1], [4, 4], classes=3, thumbnail=True)
    net.initialize()
    net(np.zeros((1, 3, 8, 8)))
    path = str(tmp_path / "small.params")
    params = net.collect_params()
    mxnet_params.write(path, [p.data().asnumpy() for p in params.values()], list(params))
    size = os.path.getsize(path)
    monkeypatch.setattr(symbol, "MAX_FILE_BYTES", size // 2)
    net.load_parameters(path)  # a params file larger than the symbol cap still loads
    monkeypatch.setattr(mxnet_params, "MAX_PARAMS_FILE_BYTES", size // 2)
    with pytest.raises(kiln.base.KilnError, match="larger than"):
        net.load_parameters(path)
