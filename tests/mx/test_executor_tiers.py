"""An Executor's inference forward walks the symbol on its first call and runs it compiled
from the second: binding to run once does not pay a compile, and both give one answer."""
import numpy as np

from kiln import cpu, sym
from kiln.mx.sym import executor as executor_module


def _bound():
    data = sym.var("data")
    net = sym.FullyConnected(data, num_hidden=3, name="fc")
    net = sym.Activation(net, act_type="tanh")
    exe = net.simple_bind(cpu(), data=(4, 5))
    rng = np.random.default_rng(0)
    for name, array in exe.arg_dict.items():
        array[:] = rng.standard_normal(array.shape).astype(np.float32)
    return exe


def test_first_inference_forward_compiles_nothing(monkeypatch):
    compiled = []
    real = executor_module.compile_symbols
    monkeypatch.setattr(executor_module, "compile_symbols",
                        lambda sym: compiled.append(sym) or real(sym))
    exe = _bound()
    first = exe.forward(is_train=False)[0].asnumpy()
    assert compiled == []
    second = exe.forward(is_train=False)[0].asnumpy()
    assert len(compiled) == 1
    exe.forward(is_train=False)
    assert len(compiled) == 1
    np.testing.assert_allclose(first, second, rtol=1e-6, atol=1e-6)


def test_walked_and_compiled_forwards_follow_new_inputs():
    exe = _bound()
    outputs = []
    for step in range(3):
        exe.arg_dict["data"][:] = float(step)
        outputs.append(exe.forward(is_train=False)[0].asnumpy())
    weight = exe.arg_dict["fc_weight"].asnumpy()
    bias = exe.arg_dict["fc_bias"].asnumpy()
    for step, out in enumerate(outputs):
        expected = np.tanh(np.full((4, 5), step, np.float32) @ weight.T + bias)
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
