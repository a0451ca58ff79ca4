"""Shared access to tests/fixtures/io (what MXNet 1.9.1's mx.io iterators produced)."""
import json
import os

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "io")


def fixture_path(name):
    return os.path.join(HERE, name)


def expected_batches(key):
    """[(data list, label list, pad, index)] of MXNet's run `key`, and its extra metadata."""
    store = np.load(fixture_path("expected.npz"))
    meta = json.loads(str(store[key + "/meta"]))
    out = []
    for k in range(meta["n"]):
        data = [store[f"{key}/{k}/data{j}"] for j in range(10) if f"{key}/{k}/data{j}" in store]
        label = [store[f"{key}/{k}/label{j}"] for j in range(10)
                 if f"{key}/{k}/label{j}" in store]
        out.append((data, label, meta["pad"][k], meta["index"][k]))
    return out, meta["extra"]


def kiln_batches(it, epochs):
    out = []
    for _ in range(epochs):
        for b in it:
            index = None if b.index is None else np.asarray(b.index).astype(np.int64).tolist()
            out.append(([d.asnumpy() for d in b.data], [x.asnumpy() for x in b.label or []],
                        b.pad, index))
        it.reset()
    return out


def ndarray_inputs():
    """The (data dict, label list) the NDArrayIter cases were recorded with."""
    store = np.load(fixture_path("expected.npz"))
    data = {k.rsplit("/", 1)[1]: store[k] for k in store.files
            if k.startswith("ndarray/input/data/")}
    label = [store[f"ndarray/input/label/{k}"] for k in range(2)]
    return data, label


def ndarray_case_names():
    store = np.load(fixture_path("expected.npz"))
    return sorted(k.split("/")[1] for k in store.files
                  if k.startswith("ndarray/") and k.endswith("/meta"))
