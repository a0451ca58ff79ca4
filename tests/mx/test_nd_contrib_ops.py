"""nd.contrib additions: box_iou, box_nms, bipartite_matching, BilinearResize2D,
AdaptiveAvgPooling2D, ROIAlign and the small helpers. Expected values were printed by
MXNet 1.9.1 on the same inputs; the resampling ops also match PyTorch, and the composed
ones check gradients against finite differences and hybridized against eager."""
import numpy as onp
import pytest

from kiln import autograd
from kiln import nd
from kiln.mx.util import np_shape
from kiln.fuzz.compare import compare
from conftest import assert_close, wrap
from test_nd_legacy_names import check_grad

R = onp.random.default_rng(4)


def test_box_iou():
    a = nd.array([[0, 0, 2, 2], [1, 1, 3, 3]])
    b = nd.array([[0, 0, 1, 1], [1, 1, 2, 2], [0, 0, 2, 2]])
    assert_close(nd.contrib.box_iou(a, b), [[0.25, 0.25, 1.0], [0.0, 0.25, 0.14285715]])
    centre = nd.contrib.box_iou(nd.array([[1, 1, 2, 2]]), nd.array([[1, 1, 2, 2]]),
                                format="center")
    assert_close(centre, [[1.0]])
    lhs = onp.array([[0.0, 0.1, 2.0, 2.2], [1.05, 1.3, 3.1, 3.0]])
    rhs = onp.array([[0.2, 0.0, 1.0, 1.5], [0.9, 1.1, 2.05, 2.4]])   # no ties: max/min kinks
    check_grad(nd.contrib.box_iou, lhs, rhs)
    assert not compare(nd.contrib.box_iou, [nd.array(lhs), nd.array(rhs)], strict=True)


DETS = [[[0, 0.9, 0, 0, 2, 2], [0, 0.8, 0.1, 0.1, 2, 2], [1, 0.7, 0, 0, 2, 2],
         [0, 0.3, 5, 5, 6, 6], [0, 0.05, 5, 5, 6, 6]]]
NONE = [-1.0] * 6


def test_box_nms_as_mxnet():
    out = nd.contrib.box_nms(nd.array(DETS), overlap_thresh=0.5, valid_thresh=0.1,
                             coord_start=2, score_index=1, id_index=0)
    assert_close(out, [[DETS[0][0], DETS[0][2], DETS[0][3], NONE, NONE]])
    out = nd.contrib.box_nms(nd.array(DETS), overlap_thresh=0.5, force_suppress=True,
                             id_index=0, topk=2)
    assert_close(out, [[DETS[0][0]] + [NONE] * 4])
    centre = nd.contrib.box_nms(nd.array(DETS), id_index=0, out_format="center")
    assert_close(centre[0, 0], [0, 0.9, 1, 1, 2, 2])


def test_bipartite_matching_as_mxnet():
    rows, cols = nd.contrib.bipartite_matching(nd.array([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]]),
                                               threshold=1e-12)
    assert rows.asnumpy().tolist() == [1, -1, 0] and cols.asnumpy().tolist() == [2, 0]


def test_bilinear_resize_as_mxnet_and_torch():
    x = nd.arange(12).reshape(1, 1, 3, 4)
    assert_close(nd.contrib.BilinearResize2D(x, height=5, width=3)[0, 0, :, 1],
                 [1.5, 3.5, 5.5, 7.5, 9.5])
    assert_close(nd.contrib.BilinearResize2D(x, height=5, width=3, align_corners=False)[0, 0, 1],
                 [1.7666668, 3.1000004, 4.4333334])
    assert nd.contrib.BilinearResize2D(x, scale_height=2.0, scale_width=0.5).shape == \
        (1, 1, 6, 2)
    torch = pytest.importorskip("torch")
    data = R.uniform(-1, 1, (2, 3, 4, 5))
    for align in (True, False):
        ref = torch.nn.functional.interpolate(torch.tensor(data), size=(7, 3), mode="bilinear",
                                              align_corners=align).numpy()
        got = nd.contrib.BilinearResize2D(wrap(data), height=7, width=3, align_corners=align)
        assert_close(got, ref, rtol=1e-9, atol=1e-12)
    fn = lambda t: nd.contrib.BilinearResize2D(t, height=5, width=4)   # noqa: E731
    check_grad(fn, data[:1, :2])
    assert not compare(fn, [nd.array(data)], strict=True)


def test_adaptive_avg_pooling_as_mxnet_and_torch():
    out = nd.contrib.AdaptiveAvgPooling2D(nd.arange(16).reshape(1, 1, 4, 4), output_size=(3, 2))
    assert_close(out[0, 0], [[2.5, 4.5], [6.5, 8.5], [10.5, 12.5]])
    torch = pytest.importorskip("torch")
    data = R.uniform(-1, 1, (2, 3, 7, 5))
    ref = torch.nn.functional.adaptive_avg_pool2d(torch.tensor(data), (3, 4)).numpy()
    fn = lambda t: nd.contrib.AdaptiveAvgPooling2D(t, output_size=(3, 4))   # noqa: E731
    assert_close(fn(wrap(data)), ref, rtol=1e-9, atol=1e-12)
    check_grad(fn, data[:1, :1])
    assert not compare(fn, [nd.array(data)], strict=True)


def test_roi_align_as_mxnet():
    f = nd.arange(2 * 2 * 6 * 6).reshape(2, 2, 6, 6)
    rois = nd.array([[0, 0, 0, 3, 3], [1, 1.5, 0.5, 5, 4.2]])
    out = nd.contrib.ROIAlign(f, rois, pooled_size=(2, 2), spatial_scale=1.0, sample_ratio=2)
    assert_close(out[0, 0], [[5.25, 6.75], [14.25, 15.75]])
    assert_close(out[1, 1], [[118.925, 120.67499], [130.025, 131.77501]], rtol=1e-5)
    out = nd.contrib.ROIAlign(f, rois, pooled_size=(2, 3), spatial_scale=0.5, sample_ratio=-1,
                              aligned=True)
    assert_close(out[0, 0], [[0.0, 0.25, 0.75], [3.75, 4.0, 4.5]])
    assert_close(out[1, 0], [[73.816666, 74.4, 74.98334], [79.36666, 79.95, 80.53333]],
                 rtol=1e-5)
    data = R.uniform(-1, 1, (2, 2, 5, 5))
    boxes = wrap(onp.array([[1, 0.5, 0.2, 3.7, 4.1], [0, 1.0, 1.0, 2.5, 3.0]]))
    check_grad(lambda t: nd.contrib.ROIAlign(t, boxes, pooled_size=(2, 2), sample_ratio=2),
               data)


def test_small_helpers():
    assert nd.contrib.boolean_mask(nd.array([[1, 2], [3, 4], [5, 6]]),
                                   nd.array([0, 1, 1])).asnumpy().tolist() == [[3, 4], [5, 6]]
    assert nd.contrib.index_array(nd.ones((2, 3))).shape == (2, 3, 2)
    old, new = R.uniform(size=(3, 2)), R.uniform(size=(2, 2))
    idx = wrap(onp.array([2, 0]))
    assert_close(nd.contrib.index_copy(wrap(old), idx, wrap(new)), [new[1], old[1], new[0]])
    check_grad(lambda o, n: nd.contrib.index_copy(o, idx, n), old, new)
    assert nd.contrib.arange_like(nd.ones((2, 3)), axis=1).asnumpy().tolist() == [0, 1, 2]
    assert_close(nd.contrib.div_sqrt_dim(nd.ones((2, 4))), onp.full((2, 4), 0.5))
    assert nd.contrib.quadratic(nd.array([1.0, 2]), a=1, b=2, c=3).asnumpy().tolist() == [6, 11]
    assert float(nd.contrib.allclose(nd.ones(2), nd.ones(2))) == 1.0
    assert nd.contrib.isnan(nd.array([1, onp.nan])).asnumpy().tolist() == [0, 1]


def test_straight_through_estimators_and_gradient_multiplier():
    x = wrap(onp.array([0.2, 1.7, -0.6]))
    x.attach_grad()
    with autograd.record():
        y = (nd.contrib.round_ste(x) * 2 + nd.contrib.sign_ste(x)
             + nd.contrib.gradientmultiplier(x, scalar=-3.0)).sum()
    y.backward()
    assert_close(y, 2 * (0 + 2 - 1) + (1 + 1 - 1) + (0.2 + 1.7 - 0.6))
    assert_close(x.grad, [2 + 1 - 3.0] * 3)


def _heads(x, parts, heads):
    length, batch, width = x.shape
    d = width // (heads * parts)
    y = x.reshape(length, batch, heads, parts, d)
    return [y[:, :, :, p].transpose(1, 2, 0, 3).reshape(batch * heads, length, d)
            for p in range(parts)], d


def _merge(x, heads, batch):
    return x.reshape(batch, heads, x.shape[1], -1).transpose(2, 0, 1, 3).reshape(
        x.shape[1], batch, -1)


# NumPy references; they equal MXNet 1.9.1's outputs to the bit on float32 inputs
ATTENTION = {
    "selfatt_qk": (lambda qkv: nd.contrib.interleaved_matmul_selfatt_qk(qkv, heads=2),
                   lambda qkv: (lambda h: h[0][0] @ h[0][1].transpose(0, 2, 1) / onp.sqrt(h[1]))(
                       _heads(qkv, 3, 2)), [(3, 2, 24)]),
    "selfatt_valatt": (lambda qkv, att: nd.contrib.interleaved_matmul_selfatt_valatt(
        qkv, att, heads=2), lambda qkv, att: _merge(att @ _heads(qkv, 3, 2)[0][2], 2, 2),
        [(3, 2, 24), (4, 3, 3)]),
    "encdec_qk": (lambda q, kv: nd.contrib.interleaved_matmul_encdec_qk(q, kv, heads=2),
                  lambda q, kv: _heads(q, 1, 2)[0][0] @ _heads(kv, 2, 2)[0][0].transpose(
                      0, 2, 1) / 2.0, [(3, 2, 8), (5, 2, 16)]),
    "encdec_valatt": (lambda kv, att: nd.contrib.interleaved_matmul_encdec_valatt(
        kv, att, heads=2), lambda kv, att: _merge(att @ _heads(kv, 2, 2)[0][1], 2, 2),
        [(5, 2, 16), (4, 3, 5)]),
}


@pytest.mark.parametrize("name", sorted(ATTENTION))
def test_interleaved_attention_matmuls(name):
    fn, ref, shapes = ATTENTION[name]
    inputs = [R.uniform(-1, 1, s) for s in shapes]
    assert_close(fn(*map(wrap, inputs)), ref(*inputs), rtol=1e-9, atol=1e-12)
    check_grad(fn, *inputs)
    if name in ("selfatt_qk", "encdec_valatt"):     # the other two compile the same ops
        assert not compare(fn, [nd.array(v) for v in inputs], strict=True)


def test_box_encode_decode_as_mxnet():
    anchors = nd.array([[[0, 0, 2, 2], [1, 1, 3, 3]]])
    refs = nd.array([[[0.5, 0.2, 2.1, 2.5], [1, 1, 4, 3]]])
    targets, masks = nd.contrib.box_encode(nd.array([[1, -1]]), nd.array([[0, 1]]), anchors,
                                           refs, nd.array([0, 0, 0, 0]),
                                           nd.array([0.1, 0.1, 0.2, 0.2]))
    assert_close(targets[0], [[1.4999998, 1.7500001, -1.115718, 0.6988096], [0, 0, 0, 0]])
    assert masks.asnumpy()[0].tolist() == [[1, 1, 1, 1], [0, 0, 0, 0]]
    decode = lambda d: nd.contrib.box_decode(d, anchors, std0=0.1, std1=0.1, std2=0.2,  # noqa
                                             std3=0.2, format="corner")
    offsets = onp.array([[[0.1, 0.2, 0.3, -0.1], [0, 0, 0, 0]]])
    assert_close(decode(wrap(offsets).astype("float32"))[0, 0],
                 [-0.04183662, 0.05980128, 2.0818367, 2.0201986])
    check_grad(decode, offsets)


def test_contrib_aliases_of_layers():
    x, g, b = nd.ones((2, 3, 2)), nd.ones(3), nd.zeros(3)
    assert nd.contrib.SyncBatchNorm(x, g, b, nd.zeros(3), nd.ones(3), key="k").shape == (2, 3, 2)
    out = nd.contrib.BatchNormWithReLU(x - 2, g, b, nd.zeros(3), nd.ones(3))
    assert float(out.min()) >= 0
    emb = nd.contrib.SparseEmbedding(nd.array([0, 2]), nd.ones((4, 3)), input_dim=4,
                                     output_dim=3)
    assert emb.shape == (2, 3)


def test_index_array_of_a_scalar_and_of_zero_size_data():
    """MXNet 1.9.1 (np_shape on): a 0-d array has no axes, so its index array is (0,);
    zero-size data keeps its shape plus the axes' count."""
    with np_shape():
        assert nd.contrib.index_array(nd.ones(())).shape == (0,)
        assert nd.contrib.index_array(nd.ones((0, 2, 0)), axes=(1,)).shape == (0, 2, 0, 1)
    assert nd.contrib.index_array(nd.ones((2, 3)), axes=(-1, 0)).asnumpy().tolist() == \
        [[[0, 0], [1, 0], [2, 0]], [[0, 1], [1, 1], [2, 1]]]


@pytest.mark.parametrize("mode, shape, total", [
    ("odd_scale", (1, 2, 7, 2), 546.0), ("to_even_down", (1, 2, 4, 4), 624.0),
    ("to_even_up", (1, 2, 6, 4), 936.0), ("to_odd_down", (1, 2, 5, 3), 585.0),
    ("to_odd_up", (1, 2, 5, 5), 975.0)])
def test_bilinear_resize_modes(mode, shape, total):
    """MXNet 1.9.1's output shapes and sums for its size modes on this input."""
    x = nd.array(onp.arange(40, dtype=onp.float32).reshape(1, 2, 5, 4))
    y = nd.contrib.BilinearResize2D(x, scale_height=1.5, scale_width=0.5, mode=mode)
    assert y.shape == shape
    assert abs(float(y.sum().asnumpy()) - total) < 1e-3


def test_bilinear_resize_like_is_a_symbol_input_in_mode_like_only():
    from kiln import sym
    d, like = sym.Variable("d"), sym.Variable("l")
    s = sym.contrib.BilinearResize2D(d, like, mode="like")
    assert s.list_arguments() == ["d", "l"]
    assert s.infer_shape(d=(1, 2, 5, 4), l=(1, 1, 3, 7))[1] == [(1, 2, 3, 7)]
    assert sym.contrib.BilinearResize2D(d, height=3, width=2).list_arguments() == ["d"]


def test_roi_align_position_sensitive_matches_mxnet():
    """Each bin reads its own channel group (R-FCN); values and per-channel gradient sums
    printed by MXNet 1.9.1 for this input."""
    x = nd.array(onp.arange(240, dtype=onp.float32).reshape(1, 8, 5, 6) * 0.1)
    rois = nd.array([[0, 0.5, 1.0, 4.2, 3.7], [0, 1, 0, 5, 4]])
    x.attach_grad()
    with autograd.record():
        y = nd.contrib.ROIAlign(x, rois, pooled_size=(2, 2), spatial_scale=1.0,
                                sample_ratio=2, position_sensitive=True)
    y.backward(nd.array(onp.arange(16, dtype=onp.float32).reshape(y.shape)))
    assert_close(y.asnumpy(), [[[[1.1475, 4.3325], [7.9575, 11.1425]],
                                [[13.1475, 16.3325], [19.9575, 23.1425]]],
                               [[[0.8, 4.0], [8.0, 11.2]], [[12.8, 16.0], [20.0, 23.2]]]],
                 rtol=1e-5, atol=1e-4)
    assert_close(x.grad.asnumpy().sum(axis=(2, 3)),
                 [[8.0, 10.0, 12.0, 14.0, 16.0, 18.0, 20.0, 22.0]], rtol=1e-5, atol=1e-4)


def test_rroi_align_matches_mxnet():
    """Rotated boxes (centre, size, angle in degrees), a box past the edge and a malformed
    one; first channel of each output as printed by MXNet 1.9.1 for this input."""
    x = nd.array(onp.arange(252, dtype=onp.float32).reshape(2, 3, 6, 7) * 0.1)
    rois = nd.array([[0, 3.0, 2.5, 4.0, 3.0, 30.0], [1, 2.2, 3.1, 2.0, 5.0, -60.0],
                     [0, 10, 10, 0.5, 0.5, 0]])
    y = nd.contrib.RROIAlign(x, rois, pooled_size=(2, 3), spatial_scale=0.5)
    assert y.shape == (3, 3, 2, 3)
    assert_close(y.asnumpy()[:, 0], [[[0.9545, 0.7789, 0.6033], [1.4467, 1.2711, 1.0955]],
                                     [[13.4116, 13.6304, 13.8491], [13.7409, 13.9596, 14.1784]],
                                     [[3.7917, 3.825, 3.8583], [3.9667, 4.0, 4.0333]]],
                 rtol=1e-4, atol=1e-3)
    assert_close(y.asnumpy()[0, 2], [[9.3545, 9.1789, 9.0033], [9.8467, 9.6711, 9.4955]],
                 rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("out_type, codes, lo, hi, back", [
    ("int8", [[-89, 18, 75], [77, 109, 127]], -1.0, 1.0,
     [[-0.698039, 0.141176, 0.588235], [0.603922, 0.854902, 0.996078]]),
    ("uint8", [[0, 35, 151], [154, 219, 255]], -0.5, 1.0,
     [[0.0, 0.136986, 0.590998], [0.60274, 0.857143, 0.998043]])])
def test_quantize_and_dequantize_match_mxnet(out_type, codes, lo, hi, back):
    """Codes, ranges and dequantized values printed by MXNet 1.9.1 (CPU) for this input."""
    a = nd.array([[-0.7, 0.1392, 0.5928], [0.6027, 0.8579, 1.3]])
    q, qlo, qhi = nd.contrib.quantize(a, nd.array([-0.5]), nd.array([1.0]), out_type=out_type)
    assert q.dtype == onp.dtype(out_type) and q.asnumpy().tolist() == codes
    assert qlo.asnumpy().tolist() == [lo] and qhi.asnumpy().tolist() == [hi]
    assert_close(nd.contrib.dequantize(q, qlo, qhi).asnumpy(), back, rtol=1e-5, atol=1e-6)
