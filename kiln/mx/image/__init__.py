"""`kiln.image` (MXNet's `mx.image`): the image functions of kiln/data/image.py and
kiln/data/rotate.py, with MXNet 1.x's augmenters (augment.py), ImageIter (iterator.py) and
the detection iterator and augmenters (detection.py) built on them."""
import sys

from ...data.image import (imdecode, imread, imresize, resize_short, fixed_crop,  # noqa: F401
                           scale_down, center_crop, random_crop, color_normalize)
from ...data.rotate import imrotate, random_rotate  # noqa: F401
from .augment import (Augmenter, SequentialAug, RandomOrderAug, ResizeAug, ForceResizeAug,
    RandomCropAug, RandomSizedCropAug, CenterCropAug, BrightnessJitterAug, ContrastJitterAug,
    SaturationJitterAug, HueJitterAug, ColorJitterAug, LightingAug, ColorNormalizeAug,
    RandomGrayAug, HorizontalFlipAug, CastAug, CreateAugmenter, copyMakeBorder,
    random_size_crop)
from .iterator import ImageIter  # noqa: F401
from .detection import (DetAugmenter, DetBorrowAug, DetRandomSelectAug, DetHorizontalFlipAug,
    DetRandomCropAug, DetRandomPadAug, CreateMultiRandCropAugmenter, CreateDetAugmenter,
    ImageDetIter)

# MXNet keeps these functions in mxnet/image/image.py, and code reaches them as
# `mx.image.image.imread` (the import path is mapped in kiln/mx/alias.py's MXNET_PATHS)
image = sys.modules[__name__]
