"""MXNet's region-proposal ops (`nd.contrib.Proposal`, `MultiProposal`, Faster R-CNN's RPN
output): anchors from `scales` x `ratios` at every feature-map cell, moved by the predicted
deltas, clipped to the image, the small ones dropped, then non-maximum suppression.

They select by value, so they compute eagerly in NumPy with MXNet's conventions (pixel
widths x2 - x1 + 1, proposals ordered cell by cell, short results padded by repeating the
kept boxes); rois are rows (batch index, x1, y1, x2, y2).
"""
import numpy as _np

from .... import np as knp
from ...._core.base import KilnError
from ...._core.ndarray import ndarray


def _anchor(w, h, x_ctr, y_ctr):
    return [x_ctr - 0.5 * (w - 1), y_ctr - 0.5 * (h - 1), x_ctr + 0.5 * (w - 1),
            y_ctr + 0.5 * (h - 1)]


def base_anchors(feature_stride, ratios, scales):
    """py-faster-rcnn's generate_anchors: ratios outer, scales inner, around one cell."""
    size = float(feature_stride)
    x_ctr = y_ctr = 0.5 * (size - 1)
    out = []
    for ratio in ratios:
        ws = _np.round(_np.sqrt(size * size / ratio))
        hs = _np.round(ws * ratio)
        for scale in scales:
            out.append(_anchor(ws * scale, hs * scale, x_ctr, y_ctr))
    return _np.array(out, dtype=_np.float64)


def _proposals(scores, deltas, info, anchors, stride):
    """(K, 5) boxes and scores of one image, K = height * width * anchors (MXNet's order:
    cell by cell, the anchors of a cell together)."""
    a, height, width = scores.shape
    shift_x = _np.arange(width) * stride
    shift_y = _np.arange(height) * stride
    boxes = (anchors[:, None, None, :] + _np.stack(
        _np.broadcast_arrays(shift_x[None, :], shift_y[:, None], shift_x[None, :],
                             shift_y[:, None]), axis=-1)[None])          # (A, H, W, 4)
    d = deltas.reshape(a, 4, height, width).transpose(0, 2, 3, 1)
    w = boxes[..., 2] - boxes[..., 0] + 1
    h = boxes[..., 3] - boxes[..., 1] + 1
    cx, cy = boxes[..., 0] + 0.5 * (w - 1), boxes[..., 1] + 0.5 * (h - 1)
    pcx, pcy = d[..., 0] * w + cx, d[..., 1] * h + cy
    pw, ph = _np.exp(d[..., 2]) * w, _np.exp(d[..., 3]) * h
    out = _np.stack([pcx - 0.5 * (pw - 1), pcy - 0.5 * (ph - 1), pcx + 0.5 * (pw - 1),
                     pcy + 0.5 * (ph - 1)], axis=-1)
    im_h, im_w = info[0], info[1]
    out[..., 0::2] = _np.clip(out[..., 0::2], 0, im_w - 1)
    out[..., 1::2] = _np.clip(out[..., 1::2], 0, im_h - 1)
    score = scores.astype(_np.float64).copy()
    # cells beyond the image's own extent (feature maps are padded) never propose
    real_h, real_w = int(im_h / stride), int(im_w / stride)
    score[:, real_h:, :] = -1
    score[:, :, real_w:] = -1
    return _np.concatenate([out.transpose(1, 2, 0, 3).reshape(-1, 4),
                            score.transpose(1, 2, 0).reshape(-1, 1)], axis=1)


def _nms(rows, threshold, limit):
    x1, y1, x2, y2 = rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3]
    areas = (x2 - x1 + 1) * (y2 - y1 + 1)
    keep, suppressed = [], _np.zeros(len(rows), bool)
    for i in range(len(rows)):
        if suppressed[i]:
            continue
        keep.append(i)
        if len(keep) >= limit:
            break
        iw = _np.maximum(0, _np.minimum(x2[i], x2) - _np.maximum(x1[i], x1) + 1)
        ih = _np.maximum(0, _np.minimum(y2[i], y2) - _np.maximum(y1[i], y1) + 1)
        inter = iw * ih
        over = inter / (areas[i] + areas - inter) > threshold
        over[:i + 1] = False
        suppressed |= over
    return keep


def _one_image(scores, deltas, info, anchors, a, pre_n, post_n, threshold, min_size, stride):
    rows = _proposals(scores, deltas, info, anchors, stride)
    # MXNet's FilterBox: boxes under min_size (scaled to the image) get score -1
    small = min_size * info[2]
    ws = rows[:, 2] - rows[:, 0] + 1
    hs = rows[:, 3] - rows[:, 1] + 1
    rows[(ws < small) | (hs < small), 4] = -1
    order = _np.argsort(-rows[:, 4], kind="stable")
    if pre_n > 0:
        order = order[:pre_n]
    rows = rows[order]
    keep = _nms(rows, threshold, post_n)
    picked = [keep[i % len(keep)] for i in range(post_n)] if keep else [0] * post_n
    return rows[picked]


def MultiProposal(cls_prob, bbox_pred, im_info, rpn_pre_nms_top_n=6000,
                  rpn_post_nms_top_n=300, threshold=0.7, rpn_min_size=16,
                  scales=(4.0, 8.0, 16.0, 32.0), ratios=(0.5, 1.0, 2.0), feature_stride=16,
                  output_score=False, iou_loss=False, **_):
    """MXNet's contrib (Multi)Proposal: region proposals of a region proposal network (Faster
    R-CNN) for each image of a batch, from anchor scores and box deltas, after non-maximum
    suppression; computed eagerly."""
    if iou_loss:
        raise KilnError("Proposal: iou_loss=True is not supported")
    cls = knp.asarray(cls_prob)._concrete("contrib.Proposal()")
    deltas = knp.asarray(bbox_pred)._concrete("contrib.Proposal()").astype(_np.float64)
    info = knp.asarray(im_info)._concrete("contrib.Proposal()").astype(_np.float64)
    anchors = base_anchors(feature_stride, ratios, scales)
    a = len(anchors)
    if cls.shape[1] != 2 * a or deltas.shape[1] != 4 * a:
        raise KilnError(f"Proposal: {a} anchors need cls_prob with {2 * a} channels and "
                        f"bbox_pred with {4 * a}, got {cls.shape[1]} and {deltas.shape[1]}")
    rois, scores = [], []
    for n in range(cls.shape[0]):
        rows = _one_image(cls[n, a:], deltas[n], info[n], anchors, a, int(rpn_pre_nms_top_n),
                          int(rpn_post_nms_top_n), float(threshold), float(rpn_min_size),
                          float(feature_stride))
        rois.append(_np.concatenate([_np.full((len(rows), 1), n), rows[:, :4]], axis=1))
        scores.append(rows[:, 4:5])
    dt = cls.dtype
    out = ndarray._wrap(_np.concatenate(rois).astype(dt))
    if output_score:
        return [out, ndarray._wrap(_np.concatenate(scores).astype(dt))]
    return out


def Proposal(cls_prob, bbox_pred, im_info, **kwargs):
    """One image's proposals (MultiProposal on a batch of one)."""
    return MultiProposal(cls_prob, bbox_pred, im_info, **kwargs)
