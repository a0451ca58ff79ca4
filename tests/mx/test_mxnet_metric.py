"""MXNet 1.x's mx.metric (kiln.metric, also gluon.metric), nd.nansum and NDArray.asscalar."""
import math

import numpy as onp
import pytest

from kiln.gluon import metric
from kiln import nd, np
from kiln.base import KilnError


def _probs(rs, n, k):
    p = rs.rand(n, k) + 0.05
    return p / p.sum(axis=1, keepdims=True)


def test_nll_and_cross_entropy_accumulate_over_updates_and_take_single_arrays():
    rs = onp.random.RandomState(0)
    batches = [(rs.randint(0, 4, n), _probs(rs, n, 4)) for n in (5, 3)]
    nll, ce = metric.NegativeLogLikelihood(), metric.create("ce")
    for labels, preds in batches:
        nll.update(np.array(labels).as_nd_ndarray(), np.array(preds).as_nd_ndarray())
        ce.update([np.array(labels)], [np.array(preds)])
    picked = onp.concatenate([p[onp.arange(len(y)), y] for y, p in batches]).astype(onp.float32)
    expected = float((-onp.log(picked + 1e-12)).mean())
    for m, name in ((nll, "nll-loss"), (ce, "cross-entropy")):
        got_name, got = m.get()
        assert got_name == name and got == pytest.approx(expected, rel=1e-6)
    nll.reset()
    assert math.isnan(nll.get()[1])


def test_accuracy_top_k_and_regression_metrics():
    rs = onp.random.RandomState(1)
    labels, preds = rs.randint(0, 5, 20), rs.rand(20, 5)
    acc = metric.create("acc")
    acc.update(np.array(labels), np.array(preds))
    assert acc.get() == ("accuracy", pytest.approx(float((preds.argmax(1) == labels).mean())))
    top3 = metric.TopKAccuracy(top_k=3)
    top3.update([np.array(labels)], [np.array(preds)])
    in_top = [labels[i] in onp.argsort(preds[i])[-3:] for i in range(20)]
    assert top3.get() == ("top_k_accuracy_3", pytest.approx(onp.mean(in_top)))
    y, yhat = rs.rand(6), rs.rand(6)
    for name, fn in (("mae", lambda d: onp.abs(d).mean()), ("mse", lambda d: (d ** 2).mean()),
                     ("rmse", lambda d: onp.sqrt((d ** 2).mean()))):
        m = metric.create(name)
        m.update(np.array(y), np.array(yhat))
        assert m.get()[1] == pytest.approx(float(fn(y.astype(onp.float32)
                                                      - yhat.astype(onp.float32))), rel=1e-5)
    both = metric.create(["acc", "mae"])
    assert both.get()[0] == ["accuracy", "mae"]


def test_metric_errors_are_clear():
    with pytest.raises(KilnError, match="does not match"):
        metric.Accuracy().update([np.zeros(2)], [np.zeros(2), np.zeros(2)])
    with pytest.raises(KilnError, match="unknown metric"):
        metric.create("no-such-metric")


def test_nansum_counts_nan_as_zero_and_asscalar():
    x = onp.array([[0.5, onp.nan, 2.0], [onp.nan, 1.0, 4.0]], dtype=onp.float32)
    a = np.array(x)
    onp.testing.assert_allclose(nd.nansum(a).asnumpy(), onp.nansum(x))
    onp.testing.assert_allclose(nd.nansum(a, axis=0).asnumpy(), onp.nansum(x, axis=0))
    onp.testing.assert_allclose(nd.nansum(a, axis=1, keepdims=True).asnumpy(),
                                onp.nansum(x, axis=1, keepdims=True))
    onp.testing.assert_allclose(nd.nansum(a, axis=0, exclude=True).asnumpy(),
                                onp.nansum(x, axis=1))
    value = np.array([2.5]).asscalar()
    assert value == 2.5 and isinstance(value, onp.float32)
    with pytest.raises(KilnError, match="size 1"):
        np.array([1.0, 2.0]).asscalar()


def test_gluon_metric_is_the_same_module_content():
    from kiln.gluon import metric as gluon_metric
    assert gluon_metric.Accuracy is metric.Accuracy



def test_get_config_makes_the_metric_again():
    import json
    from kiln.gluon import metric as mx_metric
    for name, args in (("acc", (0,)), ("f1", ()), ("perplexity", (-1,)), ("pearsonr", ())):
        made = mx_metric.create(name, *args)
        again = mx_metric.create(json.dumps(made.get_config()))
        assert type(again) is type(made) and again.get_config() == made.get_config()
    assert mx_metric.create("acc", axis=0).get_config()["axis"] == 0
    composite = mx_metric.create(["acc", "f1"])
    again = mx_metric.create(json.dumps(composite.get_config()))
    assert [type(m) for m in again.metrics] == [type(m) for m in composite.metrics]
    assert again.get_config() == composite.get_config()


def test_f1_and_mcc_count_instances_as_mxnet():
    from kiln.gluon import metric as mx_metric
    from kiln.mx import nd
    micro, macro = mx_metric.F1(average="micro"), mx_metric.MCC(average="macro")
    labels = [nd.array([1, 0]), nd.array([1, 0])]
    preds = [nd.array([[0.1, 0.9], [0.5, 0.5]]), nd.array([[0.85, 0.15], [1.0, 0.0]])]
    for m in (micro, macro):
        m.update(labels, preds)
    assert micro.num_inst == 4 and macro.num_inst == 1


def test_perplexity_sums_log_probabilities_in_the_predictions_float_type():
    # MXNet takes the log and its sum in float32 for float32 predictions; a float64 sum
    # differs in the last digits (under NumPy 1.x the comparison below is then unequal)
    import math
    import numpy as onp
    from kiln import np
    from kiln.gluon import metric as mx_metric
    pred = onp.array([[0.8, 0.2], [0.2, 0.8], [0.0, 1.0], [0.3, 0.7]], dtype=onp.float32)
    label = onp.array([0, 1, 1, 1], dtype=onp.float32)
    picked = pred[onp.arange(4), label.astype(onp.int64)]
    expected = math.exp(-float(onp.log(picked).sum(dtype=onp.float32)) / 4)
    metric = mx_metric.create("perplexity", -1)
    metric.update([np.array(label)], [np.array(pred)])
    assert metric.get()[1] == expected
