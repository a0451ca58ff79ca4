"""Executor.debug_str (kiln/mx/sym/debug_str.py): MXNet's listing of the bound graph and
its last line, the memory the executor's arrays take. The totals are the ones MXNet 1.9.1
printed for the same symbols and shapes."""
import re

from kiln import sym


def _chain():
    data = sym.Variable("data")
    for _ in range(10):
        data = data * data
    return data


def _total(executor):
    return int(re.search(r"Total (\d+) MB allocated", executor.debug_str()).group(1))


def test_memory_total_counts_what_backward_keeps():
    chain = _chain()
    assert _total(chain.simple_bind(data=(4, 256, 256))) == 12
    assert _total(chain.simple_bind(data=(4, 256, 256), grad_req="null")) == 2
    assert _total(sym.stop_gradient(chain).simple_bind(data=(4, 256, 256))) == 2


def test_listing_names_outputs_variables_and_ops():
    x = sym.Variable("x")
    text = sym.FullyConnected(x, num_hidden=3, name="fc").simple_bind(x=(2, 4)).debug_str()
    assert text.startswith("Symbol Outputs:\n\toutput[0]=fc(0)\nVariable:x\n")
    assert "Op:FullyConnected, Name=fc\nInputs:\n\targ[0]=x(0) version=0\n" in text
    assert "\tnum_hidden=3" in text
