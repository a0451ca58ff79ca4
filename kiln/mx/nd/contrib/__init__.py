"""MXNet 1.x's `nd.contrib` (also `F.contrib` in hybrid_forward): the detection ops under
their 1.x names. They are npx's functions (kiln/npx/detection.py, kiln/npx/multibox.py)."""
from ....npx.detection import multibox_prior as MultiBoxPrior  # noqa: F401
from ....npx.multibox import (multibox_target as MultiBoxTarget,
    multibox_detection as MultiBoxDetection)
from ....npx.nn import arange_like  # noqa: F401,E402
from ....npx.control_flow import cond, while_loop, foreach  # noqa: F401,E402
from .boxes import (box_iou, box_nms, box_non_maximum_suppression, bipartite_matching,
    box_encode, box_decode)
from .attention import (interleaved_matmul_selfatt_qk, interleaved_matmul_selfatt_valatt,
    interleaved_matmul_encdec_qk, interleaved_matmul_encdec_valatt)
from .proposal import Proposal, MultiProposal  # noqa: F401,E402
from .resize import (BilinearResize2D, AdaptiveAvgPooling2D, PSROIPooling, ROIAlign,  # noqa: F401
                     RROIAlign)
from .quantize import quantize, dequantize  # noqa: F401,E402
from ..optimizer_ops import adamw_update, mp_adamw_update, multi_adamw_update  # noqa
from ...ops.ctc import CTCLoss  # noqa: F401,E402
from ...ops.layers import batch_norm_statistics
from ....npx.nn import stop_gradient
from ..functions import mx_function as _mx_function, sparse_aware as _sparse_aware
from .misc import (boolean_mask, index_array, index_copy, div_sqrt_dim, allclose,  # noqa
    isnan, isinf, isfinite, round_ste, sign_ste, gradientmultiplier, rand_zipfian)
from .misc import quadratic as _quadratic

# MXNet's quadratic has a csr kernel: with c=0 (zeros stay zero) a csr operand stays csr
quadratic = _sparse_aware("contrib.quadratic", _quadratic, keeps=("csr",))

ctc_loss = CTCLoss


def getnnz(data, axis=None):
    """The number of stored values of a csr array: in all (axis=None) or per row (axis=1)."""
    from ..sparse import ops as sparse_ops
    return sparse_ops.getnnz(data, axis)


def SyncBatchNorm(data, gamma, beta, moving_mean, moving_var, output_mean_var=False,
                  **kwargs):
    """One process holds the whole batch: MXNet's BatchNorm (the key/ndev attributes are
    accepted and unused). With output_mean_var its third output is the variance itself
    (BatchNorm's is 1 / sqrt(var + eps))."""
    for k in ("key", "ndev"):
        kwargs.pop(k, None)
    if output_mean_var:
        mean, var = batch_norm_statistics(data, moving_mean, moving_var, 1,
                                          kwargs.get("use_global_stats", False))
    out = _mx_function("BatchNorm")(data, gamma, beta, moving_mean, moving_var, **kwargs)
    return (out, stop_gradient(mean), stop_gradient(var)) if output_mean_var else out


def BatchNormWithReLU(*args, **kwargs):
    """MXNet's contrib BatchNormWithReLU: `relu(BatchNorm(...))`."""
    from ....npx import relu
    return relu(_mx_function("BatchNorm")(*args, **kwargs))


def SparseEmbedding(*args, **kwargs):
    """MXNet's contrib SparseEmbedding: the lookup of Embedding (kiln's gradients are dense)."""
    return _mx_function("Embedding")(*args, **kwargs)


def DeformableConvolution(*args, **kwargs):
    """MXNet's contrib DeformableConvolution: a convolution that samples its input at positions
    moved by the given offsets."""
    return _mx_function("DeformableConvolution")(*args, **kwargs)


def ModulatedDeformableConvolution(*args, **kwargs):
    """MXNet's contrib ModulatedDeformableConvolution (DCNv2): a deformable convolution whose
    samples are also weighted by a mask."""
    return _mx_function("ModulatedDeformableConvolution")(*args, **kwargs)
