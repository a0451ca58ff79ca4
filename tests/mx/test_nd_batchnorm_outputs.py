"""nd.BatchNorm / contrib.SyncBatchNorm with output_mean_var: the statistics they normalized
with as extra outputs. Values printed by MXNet
1.9.1 on the same inputs."""
import numpy as np

from kiln import autograd, nd, sym


def _inputs():
    x = nd.array(np.arange(24, dtype="float32").reshape(2, 3, 4))
    return x, nd.ones(3), nd.zeros(3), nd.array([1., 2, 3]), nd.array([4., 5, 6])


def test_batchnorm_outputs_its_mean_and_inverse_std():
    out = nd.BatchNorm(*_inputs(), output_mean_var=True, eps=1e-3)
    np.testing.assert_allclose(out[1].asnumpy(), [1, 2, 3])
    np.testing.assert_allclose(out[2].asnumpy(), [0.4999, 0.4472, 0.4082], atol=1e-4)
    with autograd.record():
        out = nd.BatchNorm(*_inputs(), output_mean_var=True, eps=1e-3)
    np.testing.assert_allclose(out[1].asnumpy(), [7.5, 11.5, 15.5])
    np.testing.assert_allclose(out[2].asnumpy(), [0.1638] * 3, atol=1e-4)
    assert sym.BatchNorm(sym.var("d"), output_mean_var=True, name="bn").list_outputs() == \
        ["bn_output", "bn_mean", "bn_var"]
    assert sym.BatchNorm(sym.var("d"), name="bn").list_outputs() == ["bn_output"]


def test_sync_batchnorm_outputs_the_variance():
    with autograd.record():
        out = nd.contrib.SyncBatchNorm(*_inputs(), output_mean_var=True, eps=1e-3, key="k")
    np.testing.assert_allclose(out[1].asnumpy(), [7.5, 11.5, 15.5])
    np.testing.assert_allclose(out[2].asnumpy(), [37.25] * 3, rtol=1e-6)

