"""The 8x8 handwritten digits bundled with scikit-learn, as NumPy arrays (gluon.data.Digits
wraps them as a Dataset).

1797 images of 8x8 pixels with 17 grey levels, read from the copy inside the scikit-learn
package: nothing is downloaded.  Features are float32 scaled to [0, 1]; labels are int32.
The train/test split is fixed (a seeded, per-class stratified shuffle), so every run and
every machine sees the same 1438 training and 359 test images.
"""
import numpy as _np

from .._core.base import KilnError

TEST_FRACTION = 0.2
_SPLIT_SEED = 20240601  # fixed forever: changing it changes everyone's test set


def _load_sklearn_digits():
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise KilnError("the digits data set is read from scikit-learn, which is not "
                        "installed; install it with: pip install 'kiln[data]' "
                        "(or: pip install scikit-learn)") from None
    bunch = load_digits()
    return _np.asarray(bunch.data), _np.asarray(bunch.target)


def split_indices(labels, test_fraction=TEST_FRACTION, seed=_SPLIT_SEED):
    """Deterministic stratified split: (train_indices, test_indices), each sorted."""
    rng = _np.random.default_rng(seed)
    train, test = [], []
    for cls in _np.unique(labels):
        idx = _np.flatnonzero(labels == cls)
        rng.shuffle(idx)
        n_test = int(round(len(idx) * test_fraction))
        test.append(idx[:n_test])
        train.append(idx[n_test:])
    return _np.sort(_np.concatenate(train)), _np.sort(_np.concatenate(test))


def load_arrays(train=True, flatten=True):
    """(features, labels) as NumPy arrays: float32 (N, 64) or (N, 1, 8, 8), and int32 (N,)."""
    images, labels = _load_sklearn_digits()
    train_idx, test_idx = split_indices(labels)
    idx = train_idx if train else test_idx
    x = (images[idx] / 16.0).astype(_np.float32)
    if not flatten:
        x = x.reshape(-1, 1, 8, 8)
    return x, labels[idx].astype(_np.int32)
