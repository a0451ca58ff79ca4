"""contrib.Proposal / MultiProposal (Faster R-CNN's RPN) against MXNet 1.9.1 on the same
inputs (fixture made with real MXNet: tests/fixtures/proposal/make_fixture.py)."""
import os

import numpy as onp
import pytest

import kiln
from kiln import nd
from kiln.nd_contrib_proposal import base_anchors
from conftest import assert_close

F = onp.load(os.path.join(os.path.dirname(__file__), "fixtures", "proposal", "proposal.npz"))


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
