"""mx.rnn.encode_sentences and BucketSentenceIter (kiln/rnn/io.py) against MXNet 1.9.1
(tests/fixtures/io/bucket_iter.npz, made by make_bucket_fixture.py), and with
BucketingModule."""
import json
import random

import numpy as np
import pytest

import kiln
from kiln import mod as kmod, rnn
from kiln import sym

from io_fixture import fixture_path


def _want(key):
    return np.load(fixture_path("bucket_iter.npz"))[key]


def _corpus():
    rng = np.random.RandomState(5)
    words = "the cat sat on a mat and dog ran far".split()
    return [[words[k] for k in rng.randint(0, len(words), rng.randint(2, 9))]
            for _ in range(40)]


def test_encode_sentences_matches_mxnet():
    coded, vocab = rnn.encode_sentences(_corpus(), start_label=1, invalid_label=0)
    assert coded == json.loads(str(_want("coded")))
    assert vocab == json.loads(str(_want("vocab")))
    coded2, vocab2 = rnn.encode_sentences([["cat", "zebra", "yak"]], vocab=dict(vocab),
                                          unknown_token="<unk>", start_label=20)
    # as in MXNet, each unseen word re-maps unknown_token to the next id from start_label
    assert coded2 == [[vocab["cat"], 20, 21]] and vocab2["<unk>"] == 21
    with pytest.raises(kiln.KilnError, match="unknown token 'zebra'"):
        rnn.encode_sentences([["zebra"]], vocab=dict(vocab))


@pytest.mark.parametrize("layout, buckets", [("NT", None), ("TN", [3, 5, 8])])
def test_bucket_sentence_iter_matches_mxnet(layout, buckets):
    coded = json.loads(str(_want("coded")))
    random.seed(3)
    np.random.seed(3)
    it = rnn.BucketSentenceIter(coded, 3, buckets=buckets, invalid_label=0, layout=layout)
    got = []
    for _ in range(2):
        got.extend(it)
        it.reset()
    assert len(got) == int(_want(f"{layout}/n"))
    assert [b.bucket_key for b in got] == _want(f"{layout}/keys").tolist()
    for k, b in enumerate(got):
        np.testing.assert_array_equal(b.data[0].asnumpy(), _want(f"{layout}/{k}/data"))
        np.testing.assert_array_equal(b.label[0].asnumpy(), _want(f"{layout}/{k}/label"))
        assert b.provide_data[0].shape == b.data[0].shape


def test_bucketing_language_model_trains():
    coded, vocab = rnn.encode_sentences(_corpus(), start_label=1, invalid_label=0)
    it = rnn.BucketSentenceIter(coded, 4, invalid_label=0)

    def sym_gen(length):
        data, label = sym.var("data"), sym.var("softmax_label")
        embed = sym.Embedding(data, input_dim=len(vocab) + 1, output_dim=8, name="embed")
        hidden = sym.FullyConnected(sym.reshape(embed, shape=(-1, 8)), num_hidden=len(vocab)
                                    + 1, name="pred")
        out = sym.SoftmaxOutput(hidden, sym.reshape(label, shape=(-1,)), name="softmax")
        return out, ("data",), ("softmax_label",)

    module = kmod.BucketingModule(sym_gen, default_bucket_key=it.default_bucket_key)
    module.fit(it, num_epoch=3, optimizer="adam", optimizer_params=(("learning_rate", 0.05),),
               eval_metric="acc")
    assert len(module._buckets) == len(it.buckets)


def test_symbolic_cells_say_what_to_use():
    with pytest.raises(kiln.KilnError, match="use gluon.rnn"):
        rnn.ZoneoutCell      # the modifier cells are not in kiln/mx/rnn (the others are)
