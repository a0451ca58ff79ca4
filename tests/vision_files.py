"""Small stand-ins for the vision datasets, written in the published file formats."""
import gzip
import hashlib
import os
import struct

import numpy as onp


def write_idx(path, arr):
    """A gzip IDX file (MNIST's format) holding uint8 `arr`."""
    header = bytes([0, 0, 0x08, arr.ndim]) + struct.pack(f">{arr.ndim}I", *arr.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + onp.ascontiguousarray(arr, onp.uint8).tobytes())


def write_mnist(root, n_train=64, n_test=32, seed=0, balanced=False):
    """Noisy images with a bright band whose row follows the label, so even a linear
    classifier can learn them. Returns {"train"/"t10k": (images, labels)}.
    balanced: every class equally often, as in Fashion-MNIST (n a multiple of 10)."""
    os.makedirs(root, exist_ok=True)
    rs = onp.random.RandomState(seed)
    out = {}
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        labels = (rs.permutation(onp.arange(n) % 10) if balanced
                  else rs.randint(0, 10, n)).astype(onp.uint8)
        images = rs.rand(n, 28, 28) * 60
        for i, label in enumerate(labels):
            images[i, 2 * label + 4:2 * label + 7] += 180
        images = images.astype(onp.uint8)
        write_idx(os.path.join(root, f"{prefix}-images-idx3-ubyte.gz"), images)
        write_idx(os.path.join(root, f"{prefix}-labels-idx1-ubyte.gz"), labels)
        out[prefix] = (images, labels)
    return out


def write_cifar_batch(path, images, labels):
    """A CIFAR binary batch: label byte(s), then the 3x32x32 image in CHW order."""
    labels = onp.asarray(labels, onp.uint8).reshape(len(images), -1)
    chw = onp.asarray(images, onp.uint8).transpose(0, 3, 1, 2).reshape(len(images), -1)
    with open(path, "wb") as f:
        f.write(onp.concatenate([labels, chw], axis=1).tobytes())


def sha1(path):
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()
