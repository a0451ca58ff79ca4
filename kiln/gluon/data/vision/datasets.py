"""MXNet's vision datasets: MNIST, FashionMNIST, CIFAR10, CIFAR100, ImageFolderDataset.

Samples are (image, label): an (H, W, C) uint8 kiln array and an int32 kiln array (0-d for
one sample), as MXNet 1.9 gives them under `npx.set_np()`, which kiln always is in: the
book's naive Bayes calls `Y.asnumpy()` on `MNIST(...)[:]`'s labels. ImageFolderDataset's
labels are Python ints, as in MXNet. `transform(data, label)` is applied per sample.
"""
import os
import warnings

import numpy as _np

from ...._core.base import KilnError
from ...._core.ndarray import ndarray
from ....data import digits
from ..dataset import ArrayDataset, Dataset
from .dataset_files import ensure_files, read_cifar_batch, read_idx, resolve_root


class _DownloadedDataset(Dataset):
    """Images and labels held in memory as NumPy arrays (fork-shared by DataLoader workers)."""

    def __init__(self, name, root, transform):
        self._name = name
        self._root = resolve_root(root, name)
        self._transform = transform
        os.makedirs(self._root, exist_ok=True)
        self._data, self._label = self._get_data()

    def __len__(self):
        return len(self._label)

    def __getitem__(self, idx):
        from ...._core.ndarray import ndarray
        data = ndarray._wrap(_np.ascontiguousarray(self._data[idx]))
        label = ndarray._wrap(_np.asarray(self._label[idx]))
        if self._transform is not None:
            return self._transform(data, label)
        return data, label

    def _check_labels(self, labels, num_classes, path):
        if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
            raise KilnError(f"{type(self).__name__}: {path} holds labels outside "
                            f"[0, {num_classes}) (corrupt file)")


class MNIST(_DownloadedDataset):
    """MNIST digits: 28x28x1 uint8 images from the gzip IDX files in `root`."""
    _url_dir = "gluon/dataset/mnist/"
    _files = {True: (("train-images-idx3-ubyte.gz", "6c95f4b05d2bf285e1bfb0e7960c31bd3b3f8a7d"),
                     ("train-labels-idx1-ubyte.gz", "2a80914081dc54586dbdf242f9805a6b8d2a15fc")),
              False: (("t10k-images-idx3-ubyte.gz", "c3a25af1f52dad7f726cce8cacb138654b760d48"),
                      ("t10k-labels-idx1-ubyte.gz", "763e7fa3757d93b0cdec073cef058b2004252c17"))}

    def __init__(self, root=os.path.join("~", ".mxnet", "datasets", "mnist"), train=True,
                 transform=None):
        self._train = train
        super().__init__(self._url_dir.split("/")[-2], root, transform)

    def _get_data(self):
        data_path, label_path = ensure_files(type(self).__name__, self._root,
                                             self._files[bool(self._train)], self._url_dir)
        label = read_idx(label_path, 1).astype(_np.int32)
        data = read_idx(data_path, 3)
        if data.dtype != _np.uint8 or data.shape[0] != label.shape[0]:
            raise KilnError(f"{type(self).__name__}: {data_path} holds {data.shape[0]} "
                            f"{data.dtype} images but {label_path} {label.shape[0]} labels")
        self._check_labels(label, 10, label_path)
        return data[..., None], label


class FashionMNIST(MNIST):
    """Fashion-MNIST: MNIST's format and sizes, ten kinds of clothing."""
    _url_dir = "gluon/dataset/fashion-mnist/"
    _files = {True: (("train-images-idx3-ubyte.gz", "0cf37b0d40ed5169c6b3aba31069a9770ac9043d"),
                     ("train-labels-idx1-ubyte.gz", "236021d52f1e40852b06a4c3008d8de8aef1e40b")),
              False: (("t10k-images-idx3-ubyte.gz", "626ed6a7c06dd17c0eec72fa3be1740f146a2863"),
                      ("t10k-labels-idx1-ubyte.gz", "17f9ab60e7257a1620f4ad76bbbaf857c3920701"))}

    def __init__(self, root=os.path.join("~", ".mxnet", "datasets", "fashion-mnist"),
                 train=True, transform=None):
        super().__init__(root, train, transform)


class CIFAR10(_DownloadedDataset):
    """CIFAR-10: 32x32x3 uint8 images from the binary batches (data_batch_*.bin) in `root`."""
    _url_dir = "gluon/dataset/cifar10/"
    _archive = ("cifar-10-binary.tar.gz", "fab780a1e191a7eda0f345501ccd62d20f7ed891")
    _train_files = (("data_batch_1.bin", "aadd24acce27caa71bf4b10992e9e7b2d74c2540"),
                    ("data_batch_2.bin", "c0ba65cce70568cd57b4e03e9ac8d2a5367c1795"),
                    ("data_batch_3.bin", "1dd00a74ab1d17a6e7d73e185b69dbf31242f295"),
                    ("data_batch_4.bin", "aab85764eb3584312d3c7f65fd2fd016e36a258e"),
                    ("data_batch_5.bin", "26e2849e66a845b7f1e4614ae70f4889ae604628"))
    _test_files = (("test_batch.bin", "67eb016db431130d61cd03c7ad570b013799c88c"),)
    _label_bytes, _label_column, _num_classes = 1, 0, 10

    def __init__(self, root=os.path.join("~", ".mxnet", "datasets", "cifar10"), train=True,
                 transform=None):
        self._train = train
        super().__init__(self._url_dir.split("/")[-2], root, transform)

    def _get_data(self):
        files = self._train_files if self._train else self._test_files
        paths = ensure_files(type(self).__name__, self._root, files, self._url_dir,
                             archive=self._archive)
        images, labels = [], []
        for path in paths:
            img, lab = read_cifar_batch(path, self._label_bytes)
            lab = lab[:, self._label_column]
            self._check_labels(lab, self._num_classes, path)
            images.append(img)
            labels.append(lab)
        return _np.concatenate(images), _np.concatenate(labels)


class CIFAR100(CIFAR10):
    """CIFAR-100: coarse (20) labels by default, fine (100) with fine_label=True."""
    _url_dir = "gluon/dataset/cifar100/"
    _archive = ("cifar-100-binary.tar.gz", "a0bb982c76b83111308126cc779a992fa506b90b")
    _train_files = (("train.bin", "e207cd2e05b73b1393c74c7f5e7bea451d63e08e"),)
    _test_files = (("test.bin", "8fb6623e830365ff53cf14adec797474f5478006"),)
    _label_bytes = 2

    def __init__(self, root=os.path.join("~", ".mxnet", "datasets", "cifar100"),
                 fine_label=False, train=True, transform=None):
        self._label_column = int(bool(fine_label))
        self._num_classes = 100 if fine_label else 20
        super().__init__(root, train, transform)


class ImageFolderDataset(Dataset):
    """Images in root/<class name>/<file>; labels number the class folders in sorted order.
    `synsets[i]` names label i; `items` lists (filename, label)."""

    def __init__(self, root, flag=1, transform=None):
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._transform = transform
        self._exts = (".jpg", ".jpeg", ".png")
        if not os.path.isdir(self._root):
            raise KilnError(f"ImageFolderDataset: {self._root} is not a folder")
        self.synsets, self.items = [], []
        for folder in sorted(os.listdir(self._root)):
            path = os.path.join(self._root, folder)
            if not os.path.isdir(path):
                warnings.warn(f"ImageFolderDataset: ignoring {path}, which is not a folder",
                              stacklevel=2)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for filename in sorted(os.listdir(path)):
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in self._exts:
                    warnings.warn(f"ImageFolderDataset: ignoring {filename} of type {ext}; "
                                  f"only {', '.join(self._exts)} are read", stacklevel=2)
                    continue
                self.items.append((os.path.join(path, filename), label))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        from ....data import image
        filename, label = self.items[idx]
        img = image.imread(filename, self._flag)
        if self._transform is not None:
            return self._transform(img, label)
        return img, label


class Digits(ArrayDataset):
    """Digits(train=True, flatten=True, transform=None): samples are (features, label).

    `transform(data, label) -> (data, label)` is applied per sample, as in MXNet's MNIST.
    """

    def __init__(self, train=True, flatten=True, transform=None):
        x, y = digits.load_arrays(train, flatten)
        # features are kiln arrays and labels NumPy integers, as in MXNet's MNIST
        super().__init__(ndarray._wrap(x), y)
        self._train = train
        self._transform = transform

    def __getitem__(self, idx):
        item = super().__getitem__(idx)
        if self._transform is not None:
            return self._transform(*item)
        return item

    def __repr__(self):
        return f"Digits(train={self._train}, {len(self)} samples)"
