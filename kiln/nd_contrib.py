"""MXNet 1.x's `nd.contrib` (also `F.contrib` in hybrid_forward): the detection ops under
their 1.x names. They are npx's functions (kiln/npx/detection.py, kiln/npx/multibox.py)."""
from .npx.detection import multibox_prior as MultiBoxPrior  # noqa: F401
from .npx.multibox import (multibox_target as MultiBoxTarget,  # noqa: F401
                           multibox_detection as MultiBoxDetection)
from .npx.nn import arange_like  # noqa: F401,E402
from .npx.control_flow import cond, while_loop, foreach  # noqa: F401,E402
from .nd_contrib_boxes import (box_iou, box_nms, box_non_maximum_suppression,  # noqa: F401,E402
                               bipartite_matching)
from .nd_contrib_resize import (BilinearResize2D, AdaptiveAvgPooling2D,  # noqa: F401,E402
                                ROIAlign)
from .nd_contrib_misc import (boolean_mask, index_array, index_copy, div_sqrt_dim,  # noqa
                              quadratic, allclose, isnan, isinf, isfinite, round_ste, sign_ste,
                              gradientmultiplier)
