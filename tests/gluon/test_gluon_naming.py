"""MXNet 1.x's names for blocks that ask for them (gluon/naming.py): a block given prefix=,
or made in a parent's name_scope(), names its parameters prefix + name as MXNet 1.9.1 does
(the expected names are the ones MXNet's own unit tests assert); other blocks keep
structural names, and files keep structural names either way."""
import json

import numpy as onp

import kiln
from kiln import gluon, init, nd
from kiln.gluon import nn, rnn


def test_prefix_and_name_scope_give_mxnet_names():
    net = nn.HybridSequential(prefix="test_")
    with net.name_scope():
        net.add(nn.Conv2D(10, 3))
        net.add(nn.Dense(10, activation="relu"))
    assert set(net.collect_params()) == {"test_conv0_weight", "test_conv0_bias",
                                         "test_dense0_weight", "test_dense0_bias"}
    assert set(net.collect_params(".*weight")) == {"test_conv0_weight", "test_dense0_weight"}
    assert net.prefix == "test_" and net.name == "test" and net[1].name == "test_dense0"
    assert net[1].weight.name == "test_dense0_weight"


def test_unnamed_blocks_stay_structural():
    net = nn.HybridSequential()
    net.add(nn.Dense(2), nn.Dense(3))
    assert list(net.collect_params()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert net.prefix == ""


def test_parameter_dict_prints_as_mxnet():
    class Net(gluon.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.dense0 = nn.Dense(10, in_units=5, use_bias=False)

    lines = str(Net(prefix="net1_").collect_params()).splitlines()
    assert lines[0] == "net1_ ("
    assert "net1_dense0_weight" in lines[1] and "(10, 5)" in lines[1] and "float32" in lines[1]
    assert lines[2] == ")"


def test_params_share_by_mxnet_name_and_files_stay_structural(tmp_path):
    class Net(gluon.Block):
        def __init__(self, in_units=0, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.dense0 = nn.Dense(5, in_units=in_units)
                self.dense1 = nn.Dense(5, in_units=in_units)

        def forward(self, x):
            return self.dense1(self.dense0(x))

    net1 = Net(prefix="net1_", in_units=5)
    net2 = Net(prefix="net2_", params=net1.collect_params())
    assert net2.dense0.weight is net1.dense0.weight
    assert net2.dense1.weight.name == "net1_dense1_weight"
    net1.collect_params().initialize()
    onp.testing.assert_array_equal(net2(nd.ones((3, 5))).asnumpy(),
                                   net1(nd.ones((3, 5))).asnumpy())
    net1.save_parameters(str(tmp_path / "net1.params"))
    net3 = Net(prefix="net3_")                           # another prefix loads the file
    net3.load_parameters(str(tmp_path / "net1.params"))
    onp.testing.assert_array_equal(net3.dense1.bias.data().asnumpy(),
                                   net1.dense1.bias.data().asnumpy())


def test_cells_in_a_scope_match_the_fused_layers_names():
    stack = rnn.HybridSequentialRNNCell(prefix="lstm0_")
    with stack.name_scope():
        for n in range(2):
            stack.add(rnn.LSTMCell(4, prefix=f"l{n}_"))
    fused = rnn.LSTM(4, num_layers=2, prefix="lstm0_")
    assert set(stack.collect_params()) == set(fused.collect_params())
    assert "lstm0_l1_h2h_bias" in fused.collect_params()


def test_params_get_in_a_scope_shares_by_name():
    class MyBlock(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.param = self.params.get("param", shape=(1,), init=init.Constant(-10.0))

    first = MyBlock()
    assert MyBlock(params=first.collect_params()).param is first.param
    other = MyBlock()
    assert other.param is not first.param and other.param.init == first.param.init


def test_initializers_compare_and_dump_as_mxnet():
    assert init.Constant(2.0) == init.Constant(2.0) and init.Constant(2.0) != init.Constant(3)
    assert init.Xavier() != init.Constant(0)
    assert init.Constant(1).dumps() == '["constant", {"value": 1}]'
    assert json.loads(init.Constant(nd.ones((2,))).dumps()) == ["constant", {"value": [1, 1]}]


def test_prelu_gamma_starts_at_mxnets_quarter():
    prelu = kiln.sym.LeakyReLU(data=kiln.sym.var("data"), act_type="prelu")
    mod = kiln.mod.Module(prelu, label_names=None)
    mod.bind(data_shapes=[("data", (10, 10))])
    mod.init_params()
    gamma = mod.get_params()[0][prelu.list_arguments()[1]]      # the auto-made gamma
    assert gamma.shape == (10,) and (gamma.asnumpy() == 0.25).all()
