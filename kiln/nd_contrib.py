"""MXNet 1.x's `nd.contrib` (also `F.contrib` in hybrid_forward): the detection ops under
their 1.x names. They are npx's functions (kiln/npx/detection.py, kiln/npx/multibox.py)."""
from .npx.detection import multibox_prior as MultiBoxPrior  # noqa: F401
from .npx.multibox import (multibox_target as MultiBoxTarget,  # noqa: F401
                           multibox_detection as MultiBoxDetection)
