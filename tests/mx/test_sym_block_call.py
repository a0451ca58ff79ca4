"""A Gluon block without parameters called on Symbols (kiln/mx/sym/block_call.py): MXNet
1.x code writes a network's loss into a Module's symbol as `loss(output, label)`."""
import numpy as np
import pytest

import kiln
from kiln import gluon, io as kio, nd, sym


def _net():
    return sym.FullyConnected(sym.var("data"), num_hidden=1, name="fc")


def test_a_loss_called_on_symbols_evaluates_and_trains_in_a_module():
    label = sym.var("label")
    loss = gluon.loss.L2Loss()(_net(), label)
    x = np.random.RandomState(0).uniform(-1, 1, (8, 3)).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5]], "float32")).ravel()
    out = loss.eval(data=nd.array(x), label=nd.array(y), fc_weight=nd.zeros((1, 3)),
                    fc_bias=nd.zeros((1,)))[0]
    np.testing.assert_allclose(out.asnumpy(), 0.5 * y ** 2, rtol=1e-6)
    mod = kiln.mod.Module(sym.make_loss(loss), data_names=("data",), label_names=("label",))
    it = kio.NDArrayIter(nd.array(x), nd.array(y), batch_size=8, label_name="label")
    mod.fit(it, num_epoch=60, optimizer="adam", optimizer_params={"learning_rate": 0.1},
            eval_metric="loss")
    assert mod.score(it, eval_metric="loss")[0][1] < 0.05


def test_optional_arguments_and_what_is_refused():
    bce = gluon.loss.SigmoidBinaryCrossEntropyLoss()
    out = bce(_net(), sym.var("label"), None, sym.var("pos_w"))
    assert out.list_arguments() == ["data", "fc_weight", "fc_bias", "label", "pos_w"]
    with pytest.raises(kiln.KilnError, match="HybridBlock.export"):
        out.tojson()
    # a block with parameters of its own and only a forward() (no MXNet op to build) is
    # refused; built-in layers and hybrid_forward blocks build (test_sym_block_params.py)

    class OwnForward(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            self.scale = gluon.Parameter("scale", shape=(2,))

        def forward(self, x):
            return x * self.scale.data()
    with pytest.raises(kiln.KilnError, match="from_block"):
        OwnForward()(sym.var("data"))
