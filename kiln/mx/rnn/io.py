"""encode_sentences and BucketSentenceIter, as MXNet 1.x's mx.rnn.io has them: the
iterator groups sentences into buckets by length (padded with invalid_label), the label of
each step is the next token, and batches of one bucket come in a random order. Shuffles draw
from Python's `random` and NumPy's global generator, as MXNet's do."""
import bisect
import random as _pyrandom

import numpy as _np

from ..._core.base import KilnError, where_in_user_code
from ...io.base import DataBatch, DataDesc, DataIter
from ..._core.ndarray import ndarray


def encode_sentences(sentences, vocab=None, invalid_label=-1, invalid_key="\n",
                     start_label=0, unknown_token=None):
    """(sentences as lists of ids, vocab). A new vocab starts as {invalid_key:
    invalid_label} and grows from start_label (skipping invalid_label); with a given
    vocab, unseen words need unknown_token (they all map to its id)."""
    building = vocab is None
    if building:
        vocab = {invalid_key: invalid_label}
    next_id, coded = start_label, []
    for sentence in sentences:
        ids = []
        for word in sentence:
            if word not in vocab:
                if not (building or unknown_token):
                    raise KilnError(f"encode_sentences: unknown token {word!r} (pass "
                                    "unknown_token to map unseen words)"
                                    + where_in_user_code())
                if next_id == invalid_label:
                    next_id += 1
                if unknown_token:
                    word = unknown_token
                vocab[word] = next_id
                next_id += 1
            ids.append(vocab[word])
        coded.append(ids)
    return coded, vocab


class BucketSentenceIter(DataIter):
    """Batches (data, label) of one bucket each, with `bucket_key` the bucket's length;
    layout 'NT' (batch, length) or 'TN'. Without `buckets`, every length with at least
    batch_size sentences is one; longer sentences than the largest bucket are dropped."""

    def __init__(self, sentences, batch_size, buckets=None, invalid_label=-1,
                 data_name="data", label_name="softmax_label", dtype="float32", layout="NT"):
        super().__init__(batch_size)
        if layout not in ("NT", "TN"):
            raise KilnError(f"BucketSentenceIter: layout must be 'NT' or 'TN', got {layout!r}"
                            + where_in_user_code())
        if not buckets:
            counts = _np.bincount([len(s) for s in sentences])
            buckets = [length for length, n in enumerate(counts) if n >= batch_size]
        buckets = sorted(buckets)
        rows = [[] for _ in buckets]
        used = [False] * (len(buckets) + 1)
        self.discarded = 0
        for sentence in sentences:
            k = bisect.bisect_left(buckets, len(sentence))
            used[k] = True
            if k == len(buckets):
                self.discarded += 1
                continue
            row = _np.full((buckets[k],), invalid_label, dtype=dtype)
            row[:len(sentence)] = sentence
            rows[k].append(row)
        self.buckets = [b for k, b in enumerate(buckets) if used[k]]
        self.data = [_np.asarray(r, dtype=dtype) for r in rows if r]
        if not self.data:
            raise KilnError("BucketSentenceIter: no sentence fits a bucket"
                            + where_in_user_code())
        self.data_name, self.label_name, self.dtype = data_name, label_name, dtype
        self.invalid_label, self.layout = invalid_label, layout
        self.major_axis = layout.find("N")
        self.default_bucket_key = max(self.buckets)
        shape = (batch_size, self.default_bucket_key)
        shape = shape if self.major_axis == 0 else shape[::-1]
        self.provide_data = [DataDesc(data_name, shape, layout=layout)]
        self.provide_label = [DataDesc(label_name, shape, layout=layout)]
        self.idx = [(i, j) for i, bucket in enumerate(self.data)
                    for j in range(0, len(bucket) - batch_size + 1, batch_size)]
        self.curr_idx = 0
        self.reset()

    def reset(self):
        self.curr_idx = 0
        _pyrandom.shuffle(self.idx)
        for bucket in self.data:
            _np.random.shuffle(bucket)
        self.nddata, self.ndlabel = [], []
        for bucket in self.data:
            label = _np.empty_like(bucket)
            label[:, :-1], label[:, -1] = bucket[:, 1:], self.invalid_label
            self.nddata.append(bucket.copy())
            self.ndlabel.append(label)

    def next(self):
        if self.curr_idx == len(self.idx):
            raise StopIteration
        i, j = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[i][j:j + self.batch_size]
        label = self.ndlabel[i][j:j + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        data, label = ndarray._wrap(_np.ascontiguousarray(data)), \
            ndarray._wrap(_np.ascontiguousarray(label))
        return DataBatch([data], [label], pad=0, bucket_key=self.buckets[i],
                         provide_data=[DataDesc(self.data_name, data.shape,
                                                layout=self.layout)],
                         provide_label=[DataDesc(self.label_name, label.shape,
                                                 layout=self.layout)])
