"""The oneDNN layer's eager kernels, registered into kiln's primitives on import.

`prim.lowerings["eager"]` is the module whose functions the primitive's impl (and gradient
rule) calls on NumPy arrays: ops.py for the convolutions, pooling and ReLU's gradient,
bnorm.py for batch normalization, lowp.py for the bfloat16 and int8 matmuls. Each function returns
None where the layer cannot take the call (KILN_DNNL=0 or the library missing, read at
each call; not float32; ...), and the primitive then runs kiln's own kernel.
"""
from ...ops.registry import REGISTRY
from . import bnorm, lowp, ops

KERNELS = {
    ops: ("conv", "conv_bias", "conv_grad_data", "conv_grad_weight", "pool", "pool_grad",
          "relu"),
    bnorm: ("batch_norm_stats", "batch_norm_train"),
    lowp: ("matmul_bf16", "conv_bf16", "dense_int8", "conv_int8"),
}

for _module, _names in KERNELS.items():
    for _name in _names:
        REGISTRY[_name].lowerings["eager"] = _module
