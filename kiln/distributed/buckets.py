"""Averaging gradients over ranks in few messages.

Each allreduce pays a latency (microseconds within a machine, tens of them across a
network), so gradients below BUCKET_BYTES are packed into shared buckets and reduced as one
message, as PyTorch DDP does; a large gradient is reduced on its own, in place. The same
bucket plan serves the eager Trainer (NumPy buffers, reduced now) and a traced training
step (symbols: the reduction becomes `allreduce` graph ops, see lowering.py).
"""
import os

import numpy as _np

from .._core.primitive import REGISTRY

BUCKET_BYTES = int(os.environ.get("KILN_DIST_BUCKET_BYTES", 1 << 18))


def plan(avals, limit=None):
    """Lists of indices into `avals` (things with .size and .dtype), one per message.

    Small arrays of one dtype share a bucket until it holds `limit` bytes; every array of
    at least `limit` bytes is a bucket of its own. Deterministic, so every rank agrees."""
    limit = BUCKET_BYTES if limit is None else limit
    buckets, open_ = [], {}
    for i, a in enumerate(avals):
        nbytes = a.size * _np.dtype(a.dtype).itemsize
        if nbytes >= limit:
            buckets.append([i])
            continue
        key = _np.dtype(a.dtype).str
        group = open_.get(key)
        if group is None:
            group = open_[key] = [[], 0]
            buckets.append(group[0])
        group[0].append(i)
        group[1] += nbytes
        if group[1] >= limit:
            del open_[key]
    return buckets


def average_buffers(buffers, reduce_buffer, limit=None):
    """Average NumPy arrays over ranks in place; reduce_buffer(flat) averages one message."""
    for bucket in plan(buffers, limit):
        if len(bucket) == 1:
            reduce_buffer(buffers[bucket[0]])
            continue
        flat = _np.concatenate([buffers[i].reshape(-1) for i in bucket])
        reduce_buffer(flat)
        start = 0
        for i in bucket:
            b = buffers[i]
            b.reshape(-1)[...] = flat[start:start + b.size]
            start += b.size


def reduce_symbols(grads, start, wait, limit=None):
    """The reduced versions of traced gradients (kiln arrays), in the same order.

    start(flat, k) adds the op that posts message k (of plan(grads, limit)), wait(started,
    after, k) the op that completes it and that the schedule places after the nodes
    `after`. Every message is posted before the first is waited on (the first wait comes
    after all starts, each later wait after the one before), so a message posted as soon
    as its gradients exist travels while the program computes the others, as in DDP."""
    concatenate = REGISTRY["concatenate"]
    buckets = plan(grads, limit)
    started = [start(grads[b[0]] if len(b) == 1 else
                     concatenate(*[grads[i].reshape(-1) for i in b], axis=0), k)
               for k, b in enumerate(buckets)]
    out = [None] * len(grads)
    previous = None
    for k, bucket in enumerate(buckets):
        previous = wait(started[k], started[1:] if k == 0 else [previous], k)
        if len(bucket) == 1:
            out[bucket[0]] = previous
            continue
        begin = 0
        for i in bucket:
            g = grads[i]
            out[i] = previous[begin:begin + g.size].reshape(g.shape)
            begin += g.size
    return out
