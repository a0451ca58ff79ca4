"""kiln.gluon.nn: Blocks and the standard layers."""
from ..block import Block, HybridBlock  # noqa: F401
from .activations import (Activation, ReLU, Sigmoid, Tanh, LeakyReLU, PReLU, ELU,  # noqa: F401
                          SELU, SiLU, Swish, GELU, Softmax)
from .basic_layers import (Sequential, HybridSequential, Concatenate,  # noqa: F401
                           HybridConcatenate, Dense, Embedding, Dropout, Flatten, Identity,
                           Lambda, HybridLambda)
from .conv_layers import (Conv1D, Conv2D, Conv3D, Conv1DTranspose, Conv2DTranspose,  # noqa
                          Conv3DTranspose, MaxPool1D, MaxPool2D, MaxPool3D, AvgPool1D,
                          AvgPool2D, AvgPool3D, GlobalMaxPool1D, GlobalMaxPool2D,
                          GlobalMaxPool3D, GlobalAvgPool1D, GlobalAvgPool2D, GlobalAvgPool3D,
                          ReflectionPad2D)
from .norm_layers import (BatchNorm, BatchNormReLU, LayerNorm, GroupNorm,  # noqa: F401
                          InstanceNorm)


def __getattr__(name):
    # SymbolBlock (kiln/gluon/symbol_block.py) loads on first use, like kiln.gluon.SymbolBlock
    if name == "SymbolBlock":
        from ..symbol_block import SymbolBlock
        return SymbolBlock
    raise AttributeError(f"module 'kiln.gluon.nn' has no attribute {name!r}")
