"""Datasets (MXNet's gluon.data): indexable collections of samples, lazily transformable."""
import numpy as _np

from ..._core.base import KilnError


class Dataset:
    """Base class: implement __getitem__ and __len__."""

    def __getitem__(self, idx):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def transform(self, fn, lazy=True):
        """A dataset whose samples are fn(*sample) (or fn(sample) for non-tuple samples)."""
        trans = _LazyTransformDataset(self, fn)
        return trans if lazy else SimpleDataset([trans[i] for i in range(len(trans))])

    def transform_first(self, fn, lazy=True):
        """Apply fn to the first element of each sample only (the data, not the label)."""
        return self.transform(_TransformFirst(fn), lazy)

    def filter(self, fn):
        from .sampler import FilterSampler
        return _SampledDataset(self, list(FilterSampler(fn, self)))

    def shard(self, num_shards, index):
        """The index-th of num_shards contiguous parts (the first ones get the remainder)."""
        if not 0 <= index < num_shards:
            raise KilnError(f"shard: index must be in [0, {num_shards}), got {index}")
        n = len(self)
        size, extra = divmod(n, num_shards)
        start = index * size + min(index, extra)
        end = start + size + (1 if index < extra else 0)
        return _SampledDataset(self, list(range(start, end)))

    def take(self, count):
        n = len(self) if count is None else min(int(count), len(self))
        return _SampledDataset(self, list(range(n)))

    def sample(self, sampler):
        return _SampledDataset(self, list(sampler))


class _TransformFirst:
    """A named callable (not a lambda) so transformed datasets stay picklable for workers."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, x, *args):
        return (self._fn(x),) + args if args else self._fn(x)


class _LazyTransformDataset(Dataset):
    def __init__(self, data, fn):
        self._data, self._fn = data, fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)


class _SampledDataset(Dataset):
    def __init__(self, data, indices):
        self._data, self._indices = data, indices

    def __len__(self):
        return len(self._indices)

    def __getitem__(self, idx):
        return self._data[self._indices[idx]]


class SimpleDataset(Dataset):
    """Wrap any sequence (list, NumPy array, kiln array) as a Dataset."""

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class ArrayDataset(Dataset):
    """Zip several equal-length arrays or lists; sample i is (a[i], b[i], ...)."""

    def __init__(self, *args):
        if not args:
            raise KilnError("ArrayDataset needs at least one array")
        self._length = len(args[0])
        for i, a in enumerate(args):
            if len(a) != self._length:
                raise KilnError(f"ArrayDataset: all arrays must have the same length; array 0 "
                                f"has {self._length}, array {i} has {len(a)}")
        # kiln arrays are indexed through their NumPy buffer (fast, and fork-shared by
        # DataLoader workers) and the row is wrapped back, so samples are kiln arrays as in MXNet
        self._data = [a._data if _is_eager_kiln(a) else a for a in args]
        self._wrap = [_is_eager_kiln(a) for a in args]

    def __len__(self):
        return self._length

    def _field(self, k, idx):
        if self._wrap[k]:
            from ..._core.ndarray import ndarray
            return ndarray._wrap(_np.asarray(self._data[k][idx]))
        return self._data[k][idx]

    def __getitem__(self, idx):
        if len(self._data) == 1:
            return self._field(0, idx)
        return tuple(self._field(k, idx) for k in range(len(self._data)))

def _is_eager_kiln(a):
    from ..._core.ndarray import ndarray
    return isinstance(a, ndarray) and a._node is None and isinstance(a._data, _np.ndarray)
