"""`nd.image` / `sym.image` (kiln/mx/ops/image.py, kiln/mx/nd/image.py) and MXNet's error
classes for image arguments. Expected values follow MXNet 1.9.1's operators."""
import numpy as np
import pytest

from kiln.mx import nd, sym
from kiln.mx import image as mx_image
from kiln.mx.test_utils import check_symbolic_backward
from kiln.gluon.data.vision import transforms


def test_image_ops_on_arrays():
    pixels = np.random.RandomState(0).randint(0, 256, (5, 4, 3)).astype("uint8")
    x = nd.array(pixels, dtype="uint8")
    assert np.array_equal(nd.image.flip_left_right(x).asnumpy(), pixels[:, ::-1])
    assert np.array_equal(nd.image.flip_top_bottom(x).asnumpy(), pixels[::-1])
    assert nd.image.flip_left_right(x).dtype == np.uint8
    tensor = nd.image.to_tensor(x)
    assert tensor.shape == (3, 5, 4) and tensor.dtype == np.float32
    assert np.allclose(tensor.asnumpy(), pixels.transpose(2, 0, 1) / 255.0)
    normed = nd.image.normalize(tensor, mean=(0.5, 0.5, 0.5), std=(0.25, 0.5, 1.0))
    assert np.allclose(normed.asnumpy()[1], (tensor.asnumpy()[1] - 0.5) / 0.5)
    assert np.array_equal(nd.image.crop(x, 1, 2, 2, 3).asnumpy(), pixels[2:5, 1:3])
    with pytest.raises(ValueError):
        nd.image.crop(x, 3, 0, 2, 2)


def test_sym_image_crop_differentiates():
    data = sym.Variable("data")
    cropped = sym.image.crop(data, 1, 1, 2, 2)
    a = np.arange(60, dtype="float32").reshape(5, 4, 3)
    grad = np.zeros_like(a)
    grad[1:3, 1:3] = a[1:3, 1:3]
    check_symbolic_backward(cropped, [a], [a[1:3, 1:3]], [grad])


def test_image_argument_errors_are_mxnets_classes():
    with pytest.raises(ValueError):
        transforms.RandomRotation([-10, 10.0], rotate_with_proba=1.1)
    with pytest.raises(TypeError):
        transforms.Rotate(10.0)(nd.ones((3, 30, 60), dtype="uint8"))
    with pytest.raises(ValueError):
        mx_image.imrotate(nd.ones((3, 8, 8)), 5, zoom_in=True, zoom_out=True)
    assert mx_image.image.imread is mx_image.imread
