"""Odd inputs to Gluon models, eager and hybridized alike: an empty batch runs; a scalar,
a Python number or None is an error naming the block and the input it expects; an input
of another dtype than the parameters is refused, as MXNet refuses it; a layer too large
to allocate is an error before anything is allocated."""
import warnings

import numpy as onp
import pytest

from kiln import np, autograd
from kiln.base import DTypeError, KilnError
from kiln.gluon import nn

pytestmark = pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")


def mlp():
    net = nn.HybridSequential()
    net.add(nn.Dense(8, activation="relu"), nn.Dense(3))
    net.initialize()
    net(np.ones((2, 5)))
    return net, (5,)


def cnn():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, activation="relu"), nn.BatchNorm(), nn.MaxPool2D(2),
            nn.Conv2D(6, 1), nn.Flatten(), nn.Dense(10))
    net.initialize()
    net(np.ones((2, 1, 8, 8)))
    return net, (1, 8, 8)


MODELS = {"mlp": mlp, "cnn": cnn}


@pytest.mark.parametrize("hybridized", [False, True])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_an_empty_batch_runs(model, hybridized):
    net, sample = MODELS[model]()
    expected = net(np.ones((3,) + sample)).shape[1:]
    if hybridized:
        net.hybridize()
    out = net(np.ones((0,) + sample))
    assert out.shape == (0,) + expected
    x = np.ones((0,) + sample)
    x.attach_grad()
    with autograd.record(train_mode=False):   # training BatchNorm needs a sample
        y = net(x)
    y.backward()
    assert x.grad.shape == x.shape


@pytest.mark.parametrize("hybridized", [False, True])
def test_flatten_of_an_empty_batch(hybridized):
    flatten = nn.Flatten()
    if hybridized:
        flatten.hybridize()
    assert flatten(np.ones((0, 3, 4, 5))).shape == (0, 60)
    assert flatten(np.ones((2, 3, 0, 5))).shape == (2, 0)


@pytest.mark.parametrize("hybridized", [False, True])
@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("bad", [np.array(1.0), 3.0, None], ids=["0-d", "float", "None"])
def test_a_non_batch_input_names_the_block_and_what_it_expects(model, hybridized, bad):
    net, sample = MODELS[model]()
    if hybridized:
        net.hybridize()
    first = net[0]
    with pytest.raises(KilnError) as info:
        net(bad)
    assert not isinstance(info.value, (IndexError, AttributeError))
    message = str(info.value)
    assert first.name in message and type(first).__name__ in message
    assert "expected" in message and str(sample[0]) in message
    assert ("None" if bad is None else "float" if isinstance(bad, float) else "shape ()") \
        in message


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_an_integer_input_is_refused_the_same_eager_and_hybridized(model, dtype):
    """MXNet's FullyConnected and Convolution infer one dtype for data and weight, and a
    mismatch is an error ("Incompatible attr in node FullyConnected at 1-th input"; for
    Convolution "This layer requires uniform type"): no cast, and no silent float64
    result as NumPy's promotion of int64 with float32 would give."""
    net, sample = MODELS[model]()
    x = np.ones((2,) + sample).astype(dtype)
    messages = []
    for hybridized in (False, True):
        if hybridized:
            net.hybridize()
        with pytest.raises(DTypeError) as info:
            net(x)
        messages.append(str(info.value).split("\n")[0])
    assert messages[0] == messages[1]
    assert net[0].name in messages[0] and dtype in messages[0] and "float32" in messages[0]
    # the same data as float32 runs
    assert net(x.astype("float32")).dtype == onp.float32


def test_a_float64_input_to_dense_computes_the_same_eager_and_hybridized():
    net, sample = mlp()
    x = np.random.normal(size=(2,) + sample).astype("float64")
    eager = net(x)
    net.hybridize()
    compiled = net(x)
    assert eager.dtype == compiled.dtype
    onp.testing.assert_allclose(compiled.asnumpy(), eager.asnumpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("hybridized", [False, True])
def test_a_float64_input_to_a_convolution_is_refused_naming_the_layer(hybridized):
    net, sample = cnn()        # the convolution primitive takes one dtype
    if hybridized:
        net.hybridize()
    with pytest.raises(DTypeError, match=f"{net[0].name} .*float64.*float32"):
        net(np.ones((2,) + sample).astype("float64"))


def test_a_layer_too_large_to_allocate_is_refused_before_allocating():
    dense = nn.Dense(1 << 40, in_units=4)
    with pytest.raises(KilnError) as info:
        dense.initialize()
    message = str(info.value)
    assert "weight" in message and str((1 << 40, 4)) in message and "bytes" in message
    deferred = nn.Dense(1 << 40, use_bias=False)      # the weight waits for the input
    deferred.initialize()
    with pytest.raises(KilnError, match=r"\(1099511627776, 4\)"):
        deferred(np.ones((1, 4)))
    with pytest.raises(KilnError, match="bytes"):
        nn.Conv2D(1 << 40, 3, in_channels=2).initialize()
    # dimensions whose product overflows 64 bits
    with pytest.raises(KilnError, match="bytes"):
        nn.Dense(1 << 62, in_units=1 << 62).initialize()


def test_the_size_check_leaves_ordinary_layers_alone():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dense = nn.Dense(1000, in_units=1000)
        dense.initialize()
    assert dense.weight.data().shape == (1000, 1000)
