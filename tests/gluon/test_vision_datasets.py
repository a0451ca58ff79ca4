"""gluon.data.vision datasets: the standard files, MXNet's roots, hashes and bad files."""
import gzip
import os
import urllib.request

import numpy as onp
import pytest

import kiln
from kiln.gluon.data import DataLoader, vision
from kiln.gluon.data.vision import transforms

from vision_files import sha1, write_cifar_batch, write_idx, write_mnist


@pytest.fixture
def offline(monkeypatch):
    """No network: every download fails at once, as it does on a machine without one."""
    def refuse(*args, **kwargs):
        raise urllib.error.URLError("network disabled in this test")
    monkeypatch.setattr(urllib.request, "urlopen", refuse)


@pytest.fixture
def unverified(monkeypatch):
    monkeypatch.setenv("KILN_DATASET_VERIFY", "0")


def _verified_fashion(root):
    """FashionMNIST with our stand-in files' own SHA-1 sums as the known hashes."""
    class Local(vision.FashionMNIST):
        _files = {train: tuple((name, sha1(os.path.join(root, name)))
                               for name, _ in vision.FashionMNIST._files[train])
                  for train in (True, False)}
    return Local


def test_fashion_mnist_reads_idx_files_with_hashes(tmp_path, offline):
    written = write_mnist(str(tmp_path))
    ds = _verified_fashion(str(tmp_path))(root=str(tmp_path), train=False)
    images, labels = written["t10k"]
    assert len(ds) == 32
    x, y = ds[3]
    assert x.shape == (28, 28, 1) and x.dtype == onp.uint8 and y.dtype == onp.int32
    onp.testing.assert_array_equal(x.asnumpy()[:, :, 0], images[3])
    assert int(y) == labels[3]


def test_labels_are_kiln_int32_arrays_as_in_mxnet_under_set_np(tmp_path, offline, unverified):
    # MXNet 1.9.1 with npx.set_np(): MNIST(train=True)[:] gives labels as an mx.np.ndarray
    # of int32 (and ds[i] a 0-d one), so the book's naive Bayes calls `Y.asnumpy()`
    written = write_mnist(str(tmp_path))
    images, labels = written["train"]
    for cls in (vision.MNIST, vision.FashionMNIST):
        ds = cls(root=str(tmp_path), train=True,
                 transform=lambda x, y: (x.astype("float32"), y))
        X, Y = ds[:]
        assert isinstance(Y, kiln.np.ndarray) and Y.dtype == onp.int32
        onp.testing.assert_array_equal(Y.asnumpy(), labels)
        onp.testing.assert_array_equal(X.asnumpy()[Y.asnumpy() == labels[0]][0, :, :, 0],
                                       images[labels == labels[0]][0])
        y = cls(root=str(tmp_path), train=True)[3][1]
        assert isinstance(y, kiln.np.ndarray) and y.shape == () and int(y) == labels[3]
    batches = list(DataLoader(vision.MNIST(root=str(tmp_path), train=True), batch_size=5))
    assert isinstance(batches[0][1], kiln.np.ndarray) and batches[0][1].dtype == onp.int32
    onp.testing.assert_array_equal(batches[0][1].asnumpy(), labels[:5])


def test_default_root_honours_mxnet_home(tmp_path, monkeypatch, offline, unverified):
    monkeypatch.setenv("MXNET_HOME", str(tmp_path))
    write_mnist(str(tmp_path / "datasets" / "mnist"))
    assert len(vision.MNIST(train=True)) == 64


def test_offline_error_names_the_files_and_the_folder(tmp_path, offline):
    with pytest.raises(kiln.KilnError) as err:
        vision.FashionMNIST(root=str(tmp_path / "fm"), train=True)
    msg = str(err.value)
    assert "train-images-idx3-ubyte.gz (missing)" in msg
    assert "train-labels-idx1-ubyte.gz (missing)" in msg
    assert str(tmp_path / "fm") in msg and "downloading failed" in msg


def test_wrong_hash_offline_is_an_error_that_says_how_to_accept(tmp_path, offline):
    write_mnist(str(tmp_path))
    with pytest.raises(kiln.KilnError, match="SHA-1 differs.*KILN_DATASET_VERIFY=0"):
        vision.FashionMNIST(root=str(tmp_path), train=True)


@pytest.mark.parametrize("damage, message", [
    ("truncate_gzip", "not a valid gzip file"),
    ("garbage", "not a valid gzip file"),
    ("short_payload", "truncated or corrupt"),
    ("bad_magic", "not an IDX file"),
])
def test_corrupt_idx_files_are_clear_errors(tmp_path, offline, unverified, damage, message):
    write_mnist(str(tmp_path))
    path = tmp_path / "train-images-idx3-ubyte.gz"
    raw = path.read_bytes()
    if damage == "truncate_gzip":
        path.write_bytes(raw[:len(raw) // 2])
    elif damage == "garbage":
        path.write_bytes(b"\x00" * 100)
    elif damage == "short_payload":
        body = gzip.decompress(raw)
        path.write_bytes(gzip.compress(body[:-100]))
    else:
        body = gzip.decompress(raw)
        path.write_bytes(gzip.compress(b"\x12\x34" + body[2:]))
    with pytest.raises(kiln.KilnError, match=message):
        vision.MNIST(root=str(tmp_path), train=True)


def test_mismatched_counts_and_labels(tmp_path, offline, unverified):
    write_mnist(str(tmp_path))
    write_idx(str(tmp_path / "train-labels-idx1-ubyte.gz"), onp.zeros(5, onp.uint8))
    with pytest.raises(kiln.KilnError, match="64 uint8 images but .* 5 labels"):
        vision.MNIST(root=str(tmp_path), train=True)
    write_idx(str(tmp_path / "train-labels-idx1-ubyte.gz"), onp.full(64, 11, onp.uint8))
    with pytest.raises(kiln.KilnError, match="labels outside"):
        vision.MNIST(root=str(tmp_path), train=True)


def _cifar_images(n, seed):
    return onp.random.RandomState(seed).randint(0, 256, (n, 32, 32, 3)).astype(onp.uint8)


def test_cifar10_and_cifar100_binary_batches(tmp_path, offline, unverified):
    c10 = tmp_path / "c10"
    c10.mkdir()
    imgs = [_cifar_images(4, i) for i in range(6)]
    names = [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
    for i, name in enumerate(names):
        write_cifar_batch(str(c10 / name), imgs[i], onp.arange(4) + i)
    train = vision.CIFAR10(root=str(c10))
    assert len(train) == 20
    x, y = train[6]
    onp.testing.assert_array_equal(x.asnumpy(), imgs[1][2])
    assert int(y) == 3
    test = vision.CIFAR10(root=str(c10), train=False)
    onp.testing.assert_array_equal(test[1][0].asnumpy(), imgs[5][1])

    c100 = tmp_path / "c100"
    c100.mkdir()
    for name in ("train.bin", "test.bin"):
        write_cifar_batch(str(c100 / name), imgs[0], onp.array([[1, 50], [2, 60], [3, 70],
                                                                 [4, 99]]))
    assert int(vision.CIFAR100(root=str(c100))[2][1]) == 3
    assert int(vision.CIFAR100(root=str(c100), fine_label=True)[2][1]) == 70


def test_cifar_truncated_batch_and_missing_files(tmp_path, offline, unverified):
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)]:
        write_cifar_batch(str(tmp_path / name), _cifar_images(2, 0), [0, 1])
    with open(tmp_path / "data_batch_3.bin", "r+b") as f:
        f.truncate(3000)
    with pytest.raises(kiln.KilnError, match="data_batch_3.bin: 3000 bytes is not a whole"):
        vision.CIFAR10(root=str(tmp_path))
    with pytest.raises(kiln.KilnError, match=r"test_batch.bin \(missing\)"):
        vision.CIFAR10(root=str(tmp_path), train=False)


def test_image_folder_dataset(tmp_path):
    PIL = pytest.importorskip("PIL.Image")
    for cls, color in (("cat", 10), ("dog", 200)):
        (tmp_path / cls).mkdir()
        for i in range(2):
            PIL.fromarray(onp.full((5, 6, 3), color + i, onp.uint8)).save(
                tmp_path / cls / f"{i}.png")
    (tmp_path / "dog" / "notes.txt").write_text("x")
    with pytest.warns(UserWarning, match="notes.txt"):
        ds = vision.ImageFolderDataset(str(tmp_path))
    assert ds.synsets == ["cat", "dog"] and len(ds) == 4
    x, y = ds[3]
    assert y == 1 and x.shape == (5, 6, 3) and int(x.asnumpy()[0, 0, 0]) == 201


def test_dataset_methods_and_worker_loading(tmp_path, offline, unverified):
    pytest.importorskip("PIL", reason="transforms.Resize needs Pillow (image extra)")
    written = write_mnist(str(tmp_path), n_train=40)
    ds = vision.MNIST(root=str(tmp_path))
    labels = written["train"][1]
    assert len(ds.take(7)) == 7
    evens = ds.filter(lambda sample: int(sample[1]) % 2 == 0)
    assert len(evens) == int((labels % 2 == 0).sum())
    shards = [ds.shard(3, i) for i in range(3)]
    assert [len(s) for s in shards] == [14, 13, 13]
    assert int(shards[1][0][1]) == labels[14]
    assert int(ds.sample([5, 2])[1][1]) == labels[2]
    doubled = ds.transform(lambda x, y: (x, y * 2))
    assert int(doubled[4][1]) == 2 * labels[4]
    trans = transforms.Compose([transforms.Resize(14), transforms.RandomFlipLeftRight(),
                                transforms.ToTensor(), transforms.Normalize(0.5, 0.25)])
    loader = DataLoader(ds.transform_first(trans), batch_size=8, num_workers=2)
    seen = []
    for x, y in loader:
        assert x.shape[1:] == (1, 14, 14) and x.dtype == onp.float32
        seen.append(y.asnumpy())
    onp.testing.assert_array_equal(onp.concatenate(seen), labels)
    # leaving an iteration after one batch (d2l's next(iter(loader))) must not hang
    x, _ = next(iter(DataLoader(ds.transform_first(trans), batch_size=4, num_workers=2)))
    assert x.shape == (4, 1, 14, 14)
