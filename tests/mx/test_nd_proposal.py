"""contrib.Proposal / MultiProposal (Faster R-CNN's RPN) and PSROIPooling (R-FCN) against
MXNet 1.9.1 on the same inputs (fixtures made with real MXNet: make_fixture.py in
tests/fixtures/proposal and tests/fixtures/psroi)."""
import os

import numpy as onp
import pytest

import kiln
from kiln import nd
from kiln.mx.nd.contrib.proposal import base_anchors
from conftest import assert_close
from paths import FIXTURES

F = onp.load(os.path.join(FIXTURES, "proposal", "proposal.npz"))


def test_multi_proposal_equals_mxnet():
    rois, scores = nd.contrib.MultiProposal(
        nd.array(F["cls"]), nd.array(F["bbox"]), nd.array(F["info"]), rpn_pre_nms_top_n=100,
        rpn_post_nms_top_n=20, threshold=0.5, rpn_min_size=8, feature_stride=16,
        output_score=True)
    assert rois.shape == (40, 5) and rois.dtype == onp.float32
    assert_close(rois, F["rois"], rtol=1e-5, atol=1e-4)
    assert_close(scores, F["scores"])


def test_proposal_pads_by_repeating_as_mxnet():
    rois = nd.contrib.Proposal(nd.array(F["cls"][:1]), nd.array(F["bbox"][:1]),
                               nd.array(F["info"][:1]), rpn_pre_nms_top_n=50,
                               rpn_post_nms_top_n=300, threshold=0.7, rpn_min_size=16,
                               scales=(2, 4, 8, 16), ratios=(0.5, 1, 2), feature_stride=16)
    assert_close(rois, F["single"], rtol=1e-5, atol=1e-4)


def test_anchors_are_py_faster_rcnn_s():
    anchors = base_anchors(16, (0.5, 1, 2), (8, 16, 32))
    assert anchors[0].tolist() == [-84.0, -40.0, 99.0, 55.0]     # generate_anchors()[0]
    assert anchors[4].tolist() == [-120.0, -120.0, 135.0, 135.0]


def test_wrong_channel_count_is_a_clear_error():
    with pytest.raises(kiln.KilnError, match="anchors need cls_prob"):
        nd.contrib.Proposal(nd.ones((1, 4, 2, 2)), nd.ones((1, 8, 2, 2)),
                            nd.array([[32, 32, 1]]))


P = onp.load(os.path.join(FIXTURES, "psroi", "psroi.npz"))


def test_psroi_pooling_equals_mxnet_and_differentiates():
    x, rois = nd.array(P["x"]), nd.array(P["rois"])
    out = nd.contrib.PSROIPooling(x, rois, spatial_scale=1.0, output_dim=2, pooled_size=3)
    assert_close(out, P["full"], rtol=1e-5, atol=1e-6)
    doubled = P["rois"] * onp.array([1, 2, 2, 2, 2], dtype="float32")
    half = nd.contrib.PSROIPooling(x, nd.array(doubled), spatial_scale=0.5, output_dim=2,
                                   pooled_size=3, group_size=3)
    assert_close(half, P["half"], rtol=1e-5, atol=1e-6)
    from test_nd_legacy_names import check_grad
    small = onp.random.default_rng(1).uniform(-1, 1, (1, 8, 4, 4))
    boxes = nd.array([[0, 0.5, 1, 3, 3.2]])
    check_grad(lambda d: nd.contrib.PSROIPooling(d, boxes, output_dim=2, pooled_size=2), small)
    with pytest.raises(kiln.KilnError, match="output_dim"):
        nd.contrib.PSROIPooling(x, rois, output_dim=3, pooled_size=3)
    with pytest.raises(kiln.KilnError, match="batch indices must be in"):
        nd.contrib.PSROIPooling(x, nd.array(P["rois"] * 2), output_dim=2, pooled_size=3)
    with pytest.raises(kiln.KilnError, match="batch indices must be in"):
        nd.contrib.ROIAlign(x, nd.array([[5, 0, 0, 2, 2]]), pooled_size=(2, 2))
