"""gluon.rnn.LSTM(projection_size=P), MXNet's LSTMP: per layer and direction an h2r_weight
(P, H) projects the output, which is also the recurrent state (states [r (.., P), c (.., H)];
the next layer reads P * directions features). The expected values were printed by MXNet
1.9.1 for the same weights and input."""
import numpy as np
import pytest

from kiln import nd
from kiln.gluon import contrib, rnn

# bidirectional -> (out[2, 1, :4], states[1][-1, 0, :3]) from MXNet 1.9.1
MXNET = {False: ([-0.1222082, -0.04449118, -0.14139971, -0.03140037],
                 [0.15833074, 0.04274224, 0.48948842]),
         True: ([-0.1715907, -0.00067009, -0.07930662, 0.02070557],
                [0.34731907, -0.14288205, -0.15385282])}


def _layer(bidirectional):
    x = nd.array(np.random.RandomState(0).uniform(size=(3, 5, 7)))
    net = rnn.LSTM(6, projection_size=4, num_layers=2, layout="TNC",
                   bidirectional=bidirectional, prefix="lstm0_")
    net.initialize()
    states = net.begin_state(5)
    net.infer_shape(x, states)
    params = net.collect_params()
    for k, name in enumerate(sorted(params.keys())):
        shape = params[name].shape
        params[name].set_data(nd.array(np.random.RandomState(k).uniform(-.5, .5, shape)))
    return net, x, states


@pytest.mark.parametrize("bidirectional", [False, True])
def test_lstmp_layer_equals_mxnet(bidirectional):
    net, x, states = _layer(bidirectional)
    dirs = 2 if bidirectional else 1
    shapes = {k: v.shape for k, v in net.collect_params().items()}
    assert shapes["lstm0_l0_h2r_weight"] == (4, 6) and shapes["lstm0_l0_h2h_weight"] == (24, 4)
    assert shapes["lstm0_l1_i2h_weight"] == (24, 4 * dirs)
    out, new_states = net(x, states)
    assert out.shape == (3, 5, 4 * dirs)
    assert [s.shape for s in new_states] == [(2 * dirs, 5, 4), (2 * dirs, 5, 6)]
    want_out, want_c = MXNET[bidirectional]
    assert np.allclose(out.asnumpy()[2, 1, :4], want_out, atol=1e-6)
    assert np.allclose(new_states[1].asnumpy()[-1, 0, :3], want_c, atol=1e-6)


def test_lstmp_layer_equals_a_stack_of_lstmp_cells():
    net, x, states = _layer(False)
    stack = rnn.HybridSequentialRNNCell(prefix="lstm0_")
    with stack.name_scope():
        for i in range(2):
            stack.add(contrib.rnn.LSTMPCell(6, projection_size=4, prefix=f"l{i}_"))
    stack.initialize()
    cell_params = stack.collect_params()
    stack.unroll(3, x, layout="TNC", merge_outputs=True)     # infers the deferred shapes
    for name, param in net.collect_params().items():
        cell_params[name].set_data(param.data())
    want, _ = net(x, states)
    got, _ = stack.unroll(3, x, layout="TNC", merge_outputs=True)
    assert np.allclose(got.asnumpy(), want.asnumpy(), atol=1e-5)
    with pytest.raises(Exception, match="projection"):
        net._unfuse()
