"""mx.mon.Monitor on a Module's forward_backward reports every op node's input gradients as
MXNet names them (`<node>_backward_output<k>`). The expected statistics were printed by
MXNet 1.9.1 on this network and these weights."""
import numpy as np

from kiln import io as kio, mod, nd, sym
from kiln.mx.monitor import Monitor

MXNET_1_9_1 = {
    "act_0_backward_output": 0.009362806, "act_0_output": 0.59507716,
    "act_1_backward_output": 0.088298395, "act_1_output": 0.7621468, "data": 0.075,
    "fc_0_backward_output0": 0.7621468, "fc_0_backward_output1": 0.00070221035,
    "fc_0_backward_output2": 0.009362806, "fc_0_bias": 0.35, "fc_0_output": 0.385,
    "fc_0_weight": 0.22500001, "fc_1_backward_output0": 0.038860314,
    "fc_1_backward_output1": 0.05254436, "fc_1_backward_output2": 0.088298395,
    "fc_1_bias": 0.6, "fc_1_output": 1.1654137, "fc_1_weight": 0.475,
    "softmax_backward_output0": 0.4792183, "softmax_backward_output1": 0.0,
    "softmax_label": 0.5, "softmax_output": 0.7621468}


def test_monitor_sees_the_backward_of_every_node():
    x = sym.var("data")
    for k in range(2):
        x = sym.FullyConnected(name=f"fc_{k}", data=x, num_hidden=2)
        x = sym.Activation(name=f"act_{k}", data=x, act_type="sigmoid")
    x = sym.LinearRegressionOutput(data=x, name="softmax", grad_scale=2)
    train = kio.NDArrayIter(nd.array([[0.05, .10]]), nd.array([[.01, 0.99]]), batch_size=1)
    mon = Monitor(1, stat_func=lambda a: nd.array([np.abs(a.asnumpy()).mean()]), sort=True)
    module = mod.Module(x)
    module.bind(train.provide_data, label_shapes=train.provide_label)
    module.install_monitor(mon)
    module.init_params(arg_params={
        "fc_0_weight": nd.array([[.15, .20], [.25, .30]]), "fc_0_bias": nd.array([.35, .35]),
        "fc_1_weight": nd.array([[.40, .45], [.50, .55]]), "fc_1_bias": nd.array([.60, .60])})
    mon.tic()
    module.forward_backward(next(iter(train)))
    got = {name: float(text) for _, name, text in mon.toc()}
    assert sorted(got) == sorted(MXNET_1_9_1)
    for name, want in MXNET_1_9_1.items():
        if name == "fc_0_backward_output0":
            # the data needs no gradient: MXNet leaves that buffer unwritten (it shows the
            # memory it reused, softmax_output's); kiln computes it
            continue
        np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-7, err_msg=name)


def test_monitor_callback_survives_a_reshape_and_dummy_iter_repeats_its_batch():
    """MXNet's Executor.reshape rebinds the monitor callback to the new executor, so a
    Module fed a batch of another shape keeps calling it; test_utils.DummyIter gives the
    first batch of its iterator forever."""
    from kiln.test_utils import DummyIter
    conv = sym.Convolution(sym.var("data"), kernel=(1, 1), num_filter=1, name="conv")
    module = mod.Module(conv, label_names=None)
    module.bind(for_training=False, data_shapes=[("data", (1, 3, 4, 4))])
    module.init_params()
    seen = []
    module._exec_group.execs[0].set_monitor_callback(lambda name, a: seen.append(name),
                                                     monitor_all=True)
    batches = DummyIter(kio.NDArrayIter(nd.ones((2, 3, 4, 6)), batch_size=1))
    first, second = next(batches), next(batches)
    assert first is second
    module.forward(first, is_train=False)
    assert module.get_outputs()[0].shape == (1, 1, 4, 6)
    assert set(seen) == {b"data", b"conv_data", b"conv_weight", b"conv_bias", b"conv_output"}
