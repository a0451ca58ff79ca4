"""Shape inference over MXNet 1.x Symbols with unknown sizes (kiln/mx/sym/partial_shapes.py):
sizes flow backward from later ops through Reshape and transpose, partial shapes forward
through slice and FullyConnected, as MXNet's InferShape pass gives them. Every expected
shape and value here was printed by MXNet 1.9.1 on the same code."""
import json

import numpy as np
import pytest

import kiln
from kiln import sym
from kiln.mx import util


@pytest.fixture(autouse=True)
def legacy_shape_mode():
    """MXNet 1.x's default (0 is an unknown size), whatever an earlier test left on."""
    previous = util.set_np_shape(False)
    yield
    util.set_np_shape(previous)


def test_reshape_learns_its_unknown_input_size_from_a_later_op():
    data = sym.Variable("data")
    net = sym.elemwise_add(data.reshape((-1, 0, 0), reverse=True), sym.ones(shape=(6, 5, 4)))
    assert net.infer_shape(data=(2, 0, 5, 4)) == ([(2, 3, 5, 4)], [(6, 5, 4)], [])


def test_creation_op_with_unknown_sizes_takes_them_from_its_reader():
    unknown = sym.ones(shape=[-1, -1])
    net = sym.ones(shape=[2, 3]) + sym.transpose(unknown)
    out = net.bind(kiln.cpu(), args={}).forward()[0]
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), 2.0, "float32"))
    mixed = sym.ones(shape=[2, -1]) + sym.transpose(sym.ones(shape=[3, -1]))
    assert mixed.bind(kiln.cpu(), args={}).forward()[0].shape == (2, 3)


def test_slices_of_a_partly_known_shape():
    data = sym.var("data", shape=(0, 20))
    assert sym.slice(data, begin=(None, 3), end=(5, 10)).infer_shape_partial() == \
        ([(0, 20)], [(0, 7)], [])
    assert sym.slice_axis(data, axis=1, begin=2, end=-3).infer_shape_partial() == \
        ([(0, 20)], [(0, 15)], [])
    with util.np_shape():
        data = sym.var("data", shape=(10, -1))
        assert sym.slice_axis(data, axis=0, begin=0, end=5).infer_shape_partial() == \
            ([(10, -1)], [(5, -1)], [])


def test_partial_inference_reports_what_is_known_and_full_inference_nothing():
    x, p = sym.Variable("x"), sym.Variable("p")
    out = sym.relu(sym.elemwise_add(sym.FullyConnected(x, num_hidden=8, name="a"),
                                    sym.FullyConnected(p, num_hidden=8, name="b")))
    assert out.infer_shape_partial(x=(4, 3)) == \
        ([(4, 3), (8, 3), (8,), (), (), ()], [(4, 8)], [])
    assert out.infer_shape(x=(4, 3)) == (None, None, None)
    assert out.infer_shape(x=(4, 3), p=(4, 8))[0][4] == (8, 8)


def test_weight_shape_keeps_the_unknown_channel_of_its_data():
    data, weight = sym.Variable("data", shape=(1, 0, 0, 0)), sym.Variable("weight")
    conv = sym.Convolution(sym.cast(data, dtype="float16"), sym.cast(weight, dtype="float16"),
                           num_filter=6, kernel=(3, 3), no_bias=True, num_group=2)
    args, _, _ = conv.infer_shape_partial()
    assert args == [(1, 0, 0, 0), (6, 0, 3, 3)]


def test_reshape_deprecated_target_shape():
    d = sym.Variable("d")
    assert sym.Reshape(d, target_shape=(4, 0)).infer_shape(d=(2, 3, 4, 4))[1] == [(4, 24)]
    kept = sym.Reshape(d, target_shape=(0, 0, 4), keep_highest=True)
    assert kept.infer_shape(d=(2, 3, 4, 4))[1] == [(2, 12, 4)]
    x = np.arange(96, dtype="float32").reshape(2, 3, 4, 4)
    np.testing.assert_array_equal(kept.eval(d=x)[0].asnumpy(), x.reshape(2, 12, 4))


def test_saved_json_says_when_numpy_shapes_are_on():
    assert json.loads(sym.var("d").tojson())["attrs"] == {"mxnet_version": ["int", 10901]}
    with util.np_shape():
        assert json.loads(sym.var("d").tojson())["attrs"] == \
            {"is_np_shape": ["int", 1], "mxnet_version": ["int", 10901]}
