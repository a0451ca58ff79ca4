"""A hybridized block that is dropped is freed by reference counting alone, with its compiled
programs and their buffers: neither the block's programs nor its own ParameterDict refer
back to it strongly."""
import gc
import weakref

import kiln
from kiln import autograd
from kiln.gluon import nn


def test_dropped_hybridized_block_is_freed_without_a_collection():
    gc.collect()
    gc.disable()
    try:
        net = nn.HybridSequential()
        net.add(nn.Dense(3), nn.Activation("relu"))
        net.initialize()
        net.hybridize()
        x = kiln.np.ones((2, 4))
        x.attach_grad()
        with autograd.record():
            y = net(x)
        y.backward()
        net(x)
        probe = weakref.ref(net)
        del net, y
        assert probe() is None
    finally:
        gc.enable()


def test_owned_parameter_dict_still_registers_on_its_block():
    block = nn.Block()
    w = block.params.get("w", shape=(2,))
    assert block.params._owner is block
    assert "w" in dict(block.collect_params().items()) or w in block.collect_params().values()
