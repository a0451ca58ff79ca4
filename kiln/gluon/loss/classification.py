"""Classification losses: softmax cross entropy, sigmoid binary cross entropy, logistic,
hinge and squared hinge, and the KL divergence between predicted and target
distributions."""
from ... import np as knp, npx
from ..._core.base import KilnError
from ...npx import fused_softmax
from .base import Loss, _apply_weighting, _reshape_like, _batch_mean, _as_array


class SoftmaxCrossEntropyLoss(Loss):
    """Cross entropy of softmax(pred) against class indices (sparse) or distributions."""

    def __init__(self, axis=-1, sparse_label=True, from_logits=False, weight=None,
                 batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def forward(self, pred, label, sample_weight=None):
        label = _as_array(label)
        if self._sparse_label and not self._from_logits and \
                fused_softmax.cross_entropy_ok(pred, label, self._axis):
            loss = fused_softmax.softmax_cross_entropy(pred, label)   # same bits, eager
            return _batch_mean(_apply_weighting(loss, self._weight, sample_weight),
                               self._batch_axis)
        if not self._from_logits:
            pred = npx.log_softmax(pred, axis=self._axis)
        if self._sparse_label:
            loss = -npx.pick(pred, label, axis=self._axis, keepdims=True)
        else:
            label = _reshape_like(label, pred)
            loss = -knp.sum(pred * label, axis=self._axis, keepdims=True)
        loss = _apply_weighting(loss, self._weight, sample_weight)
        return _batch_mean(loss, self._batch_axis)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class SigmoidBinaryCrossEntropyLoss(Loss):
    """Binary cross entropy; on logits it uses the overflow-free form
    max(x, 0) - x*z + log(1 + exp(-|x|))."""

    def __init__(self, from_sigmoid=False, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def forward(self, pred, label, sample_weight=None, pos_weight=None):
        label = _reshape_like(_as_array(label), pred)
        pos_weight = _as_array(pos_weight)
        if not self._from_sigmoid:
            log_term = knp.log1p(knp.exp(-knp.abs(pred)))  # log(1 + exp(-|x|)), never overflows
            if pos_weight is None:
                loss = npx.relu(pred) - pred * label + log_term
            else:
                # -[p*z*log(s) + (1-z)*log(1-s)] with s = sigmoid(x), in the same stable form
                log_weight = 1 + (pos_weight - 1) * label
                loss = pred - pred * label + log_weight * (log_term + npx.relu(-pred))
        else:
            eps = 1e-12
            pos = knp.log(pred + eps) * label
            if pos_weight is not None:
                pos = pos * pos_weight
            loss = -(pos + knp.log(1.0 - pred + eps) * (1.0 - label))
        loss = _apply_weighting(loss, self._weight, sample_weight)
        return _batch_mean(loss, self._batch_axis)


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class LogisticLoss(Loss):
    """log(1 + exp(-pred * label)) for labels in {-1, 1} ('signed') or {0, 1} ('binary')."""

    def __init__(self, weight=None, batch_axis=0, label_format="signed", **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        if label_format not in ("signed", "binary"):
            raise KilnError(f"LogisticLoss: label_format must be 'signed' or 'binary', got "
                            f"{label_format!r}")
        self._label_format = label_format

    def forward(self, pred, label, sample_weight=None):
        label = _reshape_like(_as_array(label), pred)
        if self._label_format == "signed":
            label = (label + 1.0) / 2.0
        loss = npx.relu(pred) - pred * label + npx.softplus(-knp.abs(pred))
        loss = _apply_weighting(loss, self._weight, sample_weight)
        return _batch_mean(loss, self._batch_axis)


class HingeLoss(Loss):
    """max(0, margin - pred * label) for labels in {-1, 1}."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def forward(self, pred, label, sample_weight=None):
        label = _reshape_like(_as_array(label), pred)
        loss = npx.relu(self._margin - pred * label)
        loss = _apply_weighting(loss, self._weight, sample_weight)
        return _batch_mean(loss, self._batch_axis)


class SquaredHingeLoss(HingeLoss):
    """max(0, margin - pred * label)^2 for labels in {-1, 1}."""

    def forward(self, pred, label, sample_weight=None):
        label = _reshape_like(_as_array(label), pred)
        loss = knp.square(npx.relu(self._margin - pred * label))
        loss = _apply_weighting(loss, self._weight, sample_weight)
        return _batch_mean(loss, self._batch_axis)


class KLDivLoss(Loss):
    """label * (log(label) - pred) summed per example: pred holds log-probabilities unless
    from_logits=False."""

    def __init__(self, from_logits=True, axis=-1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def forward(self, pred, label, sample_weight=None):
        label = _as_array(label)
        if not self._from_logits:
            pred = npx.log_softmax(pred, axis=self._axis)
        loss = label * (knp.log(label + 1e-12) - pred)
        loss = _apply_weighting(loss, self._weight, sample_weight)
        # summed over the non-batch axes, as MXNet's code does (its docstring says averaged)
        axes = tuple(i for i in range(loss.ndim) if i != self._batch_axis % max(loss.ndim, 1))
        return knp.sum(loss, axis=axes) if axes else loss
