"""npx.multibox_target / npx.multibox_detection against MXNet 1.9.1's outputs, recorded by
tests/fixtures/detection/make_multibox_fixture.py from a run of the real MXNet."""
import json
import os

import numpy as onp
import pytest

from kiln import autograd
from kiln import np, npx
from kiln.base import KilnError
from paths import FIXTURES

FIXTURE = onp.load(os.path.join(FIXTURES, "detection",
                                "multibox.npz"))


def _case(prefix, i):
    return {k[len(f"{prefix}{i}_"):]: FIXTURE[k] for k in FIXTURE.files
            if k.startswith(f"{prefix}{i}_")}


TARGET_CASES = sorted({int(k[1:k.index("_")]) for k in FIXTURE.files if k[0] == "t"})
DETECT_CASES = sorted({int(k[1:k.index("_")]) for k in FIXTURE.files if k[0] == "d"})


@pytest.mark.parametrize("i", TARGET_CASES)
def test_multibox_target_matches_mxnet(i):
    c = _case("t", i)
    outs = npx.multibox_target(np.array(c["anchor"]), np.array(c["label"]),
                               np.array(c["cls_pred"]), **json.loads(str(c["params"])))
    assert len(outs) == 3
    for k, got in enumerate(outs):
        assert got.dtype == onp.float32 and got.shape == c[f"out{k}"].shape
        onp.testing.assert_allclose(got.asnumpy(), c[f"out{k}"], rtol=1e-5, atol=1e-5)


def test_the_target_cases_cover_mining_ignore_and_empty_labels():
    ignored = [(_case("t", i)["out2"] < 0).sum() for i in TARGET_CASES]
    assert ignored[0] > 0 and (_case("t", 0)["out2"][2] == -1).all()  # no labels: all ignored
    assert (_case("t", 2)["out2"] == -2).any()  # ignore_label=-2 under mining


@pytest.mark.parametrize("i", DETECT_CASES)
def test_multibox_detection_matches_mxnet(i):
    c = _case("d", i)
    got = npx.multibox_detection(np.array(c["cls_prob"]), np.array(c["loc_pred"]),
                                 np.array(c["anchor"]), **json.loads(str(c["params"])))
    assert got.dtype == onp.float32 and got.shape == c["out"].shape
    onp.testing.assert_allclose(got.asnumpy(), c["out"], rtol=1e-5, atol=1e-5)


def test_background_id_moves_the_background_class():
    # MXNet 1.9.1's CPU kernel ignores background_id; kiln skips that class and numbers the
    # later ones one lower, so moving the background row to 2 gives the default's answer
    c = _case("d", 0)
    prob = c["cls_prob"]
    moved = onp.concatenate([prob[:, 1:3], prob[:, :1], prob[:, 3:]], axis=1)
    got = npx.multibox_detection(np.array(moved), np.array(c["loc_pred"]),
                                 np.array(c["anchor"]), background_id=2).asnumpy()
    onp.testing.assert_allclose(got, c["out"], rtol=1e-5, atol=1e-5)


def test_no_gradient_flows_to_the_predictions():
    c = _case("t", 1)
    pred = np.array(c["cls_pred"])
    pred.attach_grad()
    with autograd.record():
        loc, mask, cls = npx.multibox_target(np.array(c["anchor"]), np.array(c["label"]),
                                             pred, negative_mining_ratio=3)
        loss = pred.sum() + (cls * pred[:, 0]).sum() + loc.sum()
    loss.backward()
    # the targets are constants, as MXNet's zero backward makes them
    expected = onp.ones_like(c["cls_pred"])
    expected[:, 0] += cls.asnumpy()
    onp.testing.assert_allclose(pred.grad.asnumpy(), expected)


def test_bad_inputs_are_clear_errors():
    c = _case("t", 0)
    anchor, pred = np.array(c["anchor"]), np.array(c["cls_pred"])
    label = c["label"].copy()
    label[0, 2] = [-1, 0.1, 0.1, 0.2, 0.2]
    with pytest.raises(KilnError, match="multibox_target.*padding rows must be all -1"):
        npx.multibox_target(anchor, np.array(label), pred)
    with pytest.raises(KilnError, match=r"multibox_target.*anchor must be \(1, num_anchors, 4\)"):
        npx.multibox_target(anchor.reshape(-1, 4), np.array(c["label"]), pred)
    with pytest.raises(KilnError, match="multibox_target.*cls_pred must be"):
        npx.multibox_target(anchor, np.array(c["label"]), pred[:, :, :5])
    d = _case("d", 0)
    with pytest.raises(KilnError, match="multibox_detection.*loc_pred must be"):
        npx.multibox_detection(np.array(d["cls_prob"]), np.array(d["loc_pred"][:, :8]),
                               np.array(d["anchor"]))
    with pytest.raises(KilnError, match="multibox_detection.*background_id 7"):
        npx.multibox_detection(np.array(d["cls_prob"]), np.array(d["loc_pred"]),
                               np.array(d["anchor"]), background_id=7)


def test_a_hybridized_block_calling_them_runs_eagerly_on_every_call():
    from kiln.gluon import nn

    class Detect(nn.HybridBlock):
        def forward(self, scores, loc, anchors):
            return npx.multibox_detection(npx.softmax(scores, axis=1), loc, anchors)

    c = _case("d", 0)
    args = [np.array(c["cls_prob"]), np.array(c["loc_pred"]), np.array(c["anchor"])]
    expected = npx.multibox_detection(npx.softmax(args[0], axis=1), *args[1:]).asnumpy()
    net = Detect()
    net.hybridize()
    with pytest.warns(UserWarning, match="multibox_detection"):
        first = net(*args)
    for out in (first, net(*args), net(*args)):  # the second call used to recurse forever
        onp.testing.assert_allclose(out.asnumpy(), expected)


def test_mxnet_1_x_names_under_nd_contrib():
    from kiln import nd
    c = _case("t", 1)
    args = [nd.array(c["anchor"]), nd.array(c["label"]), nd.array(c["cls_pred"])]
    for got, k in zip(nd.contrib.MultiBoxTarget(*args, negative_mining_ratio=3,
                                                negative_mining_thresh=0.5), range(3)):
        onp.testing.assert_allclose(got.asnumpy(), c[f"out{k}"], rtol=1e-5, atol=1e-5)
    d = _case("d", 0)
    got = nd.contrib.MultiBoxDetection(nd.array(d["cls_prob"]), nd.array(d["loc_pred"]),
                                       nd.array(d["anchor"]))
    onp.testing.assert_allclose(got.asnumpy(), d["out"], rtol=1e-5, atol=1e-5)
    assert nd.contrib.MultiBoxPrior(nd.zeros((1, 3, 2, 2)), sizes=[0.5]).shape == (1, 4, 4)
