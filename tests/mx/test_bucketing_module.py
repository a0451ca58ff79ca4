"""mx.mod.BucketingModule (kiln/mod/bucketing_module.py): buckets share one set of
parameters and one optimizer, so training over batches of several bucket keys equals
training one Module on the same examples."""
import numpy as onp
import pytest

import kiln
from kiln import io as kio, sym
from kiln import mod as kmod


def _sym_gen(steps):
    data, label = sym.var("data"), sym.var("softmax_label")
    out = sym.FullyConnected(sym.mean(data, axis=1), num_hidden=3, name="fc")
    return sym.SoftmaxOutput(out, label, name="softmax"), ("data",), ("softmax_label",)


def _batches():
    rng = onp.random.default_rng(0)
    out = []
    for steps, batch in [(5, 4), (3, 4), (7, 4), (3, 2), (5, 4), (7, 4)]:
        x = rng.normal(size=(batch, steps, 2)).astype("float32")
        y = rng.integers(0, 3, batch).astype("float32")
        out.append((steps, x, y))
    return out


def _start(module, shapes):
    module.bind(data_shapes=[("data", shapes[0])], label_shapes=[("softmax_label",
                                                                  shapes[1])])
    w = onp.random.default_rng(1).normal(size=(3, 2)).astype("float32")
    module.set_params({"fc_weight": kiln.nd.array(w), "fc_bias": kiln.nd.zeros((3,))}, {})
    module.init_optimizer(optimizer="sgd", optimizer_params=(("learning_rate", 0.1),
                                                             ("momentum", 0.9)))


def test_buckets_share_parameters_and_optimizer_state():
    bucketing = kmod.BucketingModule(_sym_gen, default_bucket_key=5)
    _start(bucketing, ((4, 5, 2), (4,)))
    data, label = sym.var("data"), sym.var("softmax_label")
    flat = kmod.Module(sym.SoftmaxOutput(sym.FullyConnected(data, num_hidden=3, name="fc"),
                                         label, name="softmax"))
    _start(flat, ((4, 2), (4,)))
    for steps, x, y in _batches():
        batch = kio.DataBatch([kiln.nd.array(x)], [kiln.nd.array(y)], bucket_key=steps,
                              provide_data=[("data", x.shape)],
                              provide_label=[("softmax_label", y.shape)])
        bucketing.forward(batch, is_train=True)
        bucketing.backward()
        bucketing.update()
        flat.forward(kio.DataBatch([kiln.nd.array(x.mean(axis=1))], [kiln.nd.array(y)]),
                     is_train=True)
        flat.backward()
        flat.update()
    got, want = bucketing.get_params()[0], flat.get_params()[0]
    for name in ("fc_weight", "fc_bias"):
        onp.testing.assert_allclose(got[name].asnumpy(), want[name].asnumpy(), rtol=1e-5,
                                    atol=1e-6)
    assert sorted(bucketing._buckets) == [3, 5, 7]
    weights = {id(m._exec.arg_dict["fc_weight"]) for m in bucketing._buckets.values()}
    assert len(weights) == 1   # one array, also after bucket 3 was rebound for batch 2


class _BucketIter(kio.DataIter):
    def __init__(self):
        super().__init__(4)
        self.provide_data = [("data", (4, 5, 2))]
        self.provide_label = [("softmax_label", (4,))]
        self.default_bucket_key = 5
        self.reset()

    def reset(self):
        self._left = [b for b in _batches() if len(b[2]) == 4]

    def next(self):
        if not self._left:
            raise StopIteration
        steps, x, y = self._left.pop(0)
        return kio.DataBatch([kiln.nd.array(x)], [kiln.nd.array(y)], bucket_key=steps,
                             provide_data=[("data", x.shape)],
                             provide_label=[("softmax_label", y.shape)])


def test_fit_and_score_over_buckets():
    module = kmod.BucketingModule(_sym_gen, default_bucket_key=5)
    module.fit(_BucketIter(), num_epoch=2, optimizer="sgd",
               optimizer_params=(("learning_rate", 0.1),), eval_metric="acc")
    (name, value), = module.score(_BucketIter(), "acc")
    assert name == "accuracy" and 0.0 <= value <= 1.0
    assert sorted(module._buckets) == [3, 5, 7]


def test_bucketing_errors():
    with pytest.raises(kiln.KilnError, match="default_bucket_key is required"):
        kmod.BucketingModule(_sym_gen)
    bad = kmod.BucketingModule(lambda key: sym.var("data"), default_bucket_key=1)
    with pytest.raises(kiln.KilnError, match="must return"):
        bad.bind(data_shapes=[("data", (2, 3))])
    module = kmod.BucketingModule(_sym_gen, default_bucket_key=5)
    with pytest.raises(kiln.KilnError, match="init_params"):
        module.get_params()
