"""amp.init runs eager code in mixed precision too, as MXNet's amp.init does for
imperative calls (kiln/_core/dispatch.py's eager substitute, set by
hybrid/precision.set_default_precision_pipeline): an eager Dense or Conv2D computes what the
hybridized, converted block computes, and float32 again once AMP is reset."""
import numpy as onp

from kiln import autograd, gluon, init, np
from kiln.contrib import amp
from kiln.gluon import nn
from kiln.hybrid import precision

R = onp.random.default_rng(12)


def _net():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, padding=1, activation="relu", in_channels=3),
            nn.Dense(10, in_units=8 * 36))
    net.initialize(init.Xavier())
    return net


def test_eager_calls_after_amp_init_equal_the_converted_hybridized_block():
    x = np.array(R.standard_normal((4, 3, 6, 6)).astype("float32"))
    net = _net()
    f32 = net(x).asnumpy()
    try:
        amp.init(target_dtype="bfloat16")
        eager = net(x).asnumpy()
        with autograd.record():
            loss = gluon.loss.L2Loss()(net(x), np.zeros((4, 10)))
        loss.backward()
        grads = [p.grad().asnumpy() for p in net.collect_params().values()]
    finally:
        precision.set_default_precision_pipeline(None)
    assert all(g.dtype == onp.float32 and onp.isfinite(g).all() for g in grads)
    assert not onp.array_equal(eager, f32)      # the products were rounded to bfloat16
    onp.testing.assert_allclose(eager, f32, rtol=0.05, atol=0.05 * onp.abs(f32).max())
    hybrid = _net()
    for (_, a), (_, b) in zip(net.collect_params().items(), hybrid.collect_params().items()):
        b.set_data(a.data())
    amp.convert_hybrid_block(hybrid, "bfloat16")
    hybrid.hybridize(backend="numpy")
    onp.testing.assert_allclose(hybrid(x).asnumpy(), eager, rtol=1e-5, atol=1e-6)
    # reset: eager code is float32 again
    onp.testing.assert_array_equal(net(x).asnumpy(), f32)
