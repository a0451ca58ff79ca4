"""MXNet 1.x's `nd.contrib` (also `F.contrib` in hybrid_forward): the detection ops under
their 1.x names. They are npx's functions (kiln/npx/detection.py, kiln/npx/multibox.py)."""
from .npx.detection import multibox_prior as MultiBoxPrior  # noqa: F401
from .npx.multibox import (multibox_target as MultiBoxTarget,  # noqa: F401
                           multibox_detection as MultiBoxDetection)
from .npx.nn import arange_like  # noqa: F401,E402
from .npx.control_flow import cond, while_loop, foreach  # noqa: F401,E402
from .nd_contrib_boxes import (box_iou, box_nms, box_non_maximum_suppression,  # noqa: F401,E402
                               bipartite_matching, box_encode, box_decode)
from .nd_contrib_attention import (interleaved_matmul_selfatt_qk,  # noqa: F401,E402
                                   interleaved_matmul_selfatt_valatt,
                                   interleaved_matmul_encdec_qk, interleaved_matmul_encdec_valatt)
from .nd_contrib_proposal import Proposal, MultiProposal  # noqa: F401,E402
from .nd_contrib_resize import (BilinearResize2D, AdaptiveAvgPooling2D, PSROIPooling,  # noqa
                                ROIAlign)
from .nd_optimizer_ops import adamw_update, mp_adamw_update, multi_adamw_update  # noqa
from .mxnet_ops_ctc import CTCLoss  # noqa: F401,E402
ctc_loss = CTCLoss
from .nd_contrib_misc import (boolean_mask, index_array, index_copy, div_sqrt_dim,  # noqa
                              quadratic, allclose, isnan, isinf, isfinite, round_ste, sign_ste,
                              gradientmultiplier, rand_zipfian)


def SyncBatchNorm(*args, **kwargs):
    """One process holds the whole batch: MXNet's BatchNorm (the key/ndev attributes are
    accepted and unused)."""
    from .nd_api import mx_function
    for k in ("key", "ndev"):
        kwargs.pop(k, None)
    return mx_function("BatchNorm")(*args, **kwargs)


def BatchNormWithReLU(*args, **kwargs):
    from .nd_api import mx_function
    from .npx import relu
    return relu(mx_function("BatchNorm")(*args, **kwargs))


def SparseEmbedding(*args, **kwargs):
    from .nd_api import mx_function
    return mx_function("Embedding")(*args, **kwargs)


def DeformableConvolution(*args, **kwargs):
    from .nd_api import mx_function
    return mx_function("DeformableConvolution")(*args, **kwargs)


def ModulatedDeformableConvolution(*args, **kwargs):
    from .nd_api import mx_function
    return mx_function("ModulatedDeformableConvolution")(*args, **kwargs)
