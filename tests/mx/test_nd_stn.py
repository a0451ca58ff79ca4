"""GridGenerator, BilinearSampler, SpatialTransformer, Correlation: values as MXNet 1.9.1
printed them, sampling and gradients (data and grid) equal to PyTorch's grid_sample
(align_corners=True, zero padding), hybridized equal to eager."""
import numpy as onp
import pytest

from kiln import autograd
from kiln import nd
from kiln.fuzz.compare import compare
from conftest import assert_close, wrap

R = onp.random.default_rng(0)
X = R.uniform(-1, 1, (2, 3, 4, 5)).astype("float32")
THETA = onp.array([[0.9, 0.1, 0.05, -0.2, 1.1, 0.1], [1.2, 0, -0.3, 0.1, 0.8, 0.4]],
                  dtype="float32")


def test_values_as_mxnet():
    grid = nd.GridGenerator(nd.array(THETA), transform_type="affine", target_shape=(3, 4))
    assert_close(grid[0, :, 1], [[-0.85, -0.25, 0.35, 0.95], [0.3, 0.16666666, 0.03333332, -0.1]])
    out = nd.BilinearSampler(nd.array(X), grid)
    assert_close(out[1, 2, 0], [0.0, -0.08249105, 0.51316136, 0.18899965])
    st = nd.SpatialTransformer(nd.array(X), nd.array(THETA), target_shape=(3, 4),
                               transform_type="affine", sampler_type="bilinear")
    assert_close(st[0, 0, 0], [0.36962798, -0.50924414, -0.8482489, 0.10394622])
    flow = nd.array(onp.zeros((1, 2, 3, 4)))
    warp = nd.GridGenerator(flow, transform_type="warp")
    assert_close(warp[0, 0, 0], [-1, -1 / 3, 1 / 3, 1])       # the identity grid


def test_sampling_and_gradients_equal_torch():
    torch = pytest.importorskip("torch")
    data = R.uniform(-1, 1, (2, 3, 4, 5))
    grid = R.uniform(-1.3, 1.3, (2, 2, 3, 4))          # some samples fall outside
    proj = R.standard_normal((2, 3, 3, 4))
    td = torch.tensor(data, requires_grad=True)
    tg = torch.tensor(grid, requires_grad=True)
    ref = torch.nn.functional.grid_sample(td, tg.permute(0, 2, 3, 1), mode="bilinear",
                                          padding_mode="zeros", align_corners=True)
    (ref * torch.tensor(proj)).sum().backward()
    d, g = wrap(data), wrap(grid)
    d.attach_grad()
    g.attach_grad()
    with autograd.record():
        out = nd.BilinearSampler(d, g)
        (out * wrap(proj)).sum().backward()
    assert_close(out, ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert_close(d.grad, td.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert_close(g.grad, tg.grad.numpy(), rtol=1e-9, atol=1e-10)


def test_hybridized_equals_eager():
    def f(data, loc):
        return nd.SpatialTransformer(data, loc, target_shape=(3, 4)) * 2.0
    findings = compare(f, [nd.array(X), nd.array(THETA)], strict=True)
    assert not findings, "\n".join(map(repr, findings))


def _correlation_reference(a, b, k, md, s1, s2, pad, multiply=True):
    """Brute force, loop by loop (equal to MXNet 1.9.1's nd.Correlation on these cases)."""
    widths = [(0, 0), (0, 0), (pad, pad), (pad, pad)]
    p1, p2 = onp.pad(a, widths), onp.pad(b, widths)
    n, c, hp, wp = p1.shape
    border = md + (k - 1) // 2
    oh, ow = -(-(hp - 2 * border) // s1), -(-(wp - 2 * border) // s1)
    r = md // s2
    out = onp.zeros((n, (2 * r + 1) ** 2, oh, ow))
    for y in range(oh):
        for x in range(ow):
            y1, x1 = y * s1 + md, x * s1 + md
            for q, (dy, dx) in enumerate([(dy, dx) for dy in range(-r, r + 1)
                                          for dx in range(-r, r + 1)]):
                f1 = p1[:, :, y1:y1 + k, x1:x1 + k]
                f2 = p2[:, :, y1 + dy * s2:y1 + dy * s2 + k, x1 + dx * s2:x1 + dx * s2 + k]
                v = f1 * f2 if multiply else onp.abs(f1 - f2)
                out[:, q, y, x] = v.sum(axis=(1, 2, 3)) / (k * k * c)
    return out


@pytest.mark.parametrize("k,md,s1,s2,pad,multiply", [(1, 1, 1, 1, 1, True),
                                                    (3, 2, 2, 2, 2, True),
                                                    (1, 1, 1, 1, 0, False)])
def test_correlation(k, md, s1, s2, pad, multiply):
    a, b = R.uniform(-1, 1, (1, 2, 5, 6)), R.uniform(-1, 1, (1, 2, 5, 6))

    def fn(x, y):
        return nd.Correlation(x, y, kernel_size=k, max_displacement=md, stride1=s1,
                              stride2=s2, pad_size=pad, is_multiply=multiply)
    assert_close(fn(wrap(a), wrap(b)), _correlation_reference(a, b, k, md, s1, s2, pad, multiply),
                 rtol=1e-10, atol=1e-12)
    if multiply:
        from test_nd_legacy_names import check_grad
        check_grad(fn, a[:, :, :4, :4], b[:, :, :4, :4])
    if k == 1 and multiply:     # one compiled case: the program grows with displacements^2
        assert not compare(fn, [nd.array(a), nd.array(b)], strict=True)
