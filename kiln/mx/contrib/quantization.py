"""MXNet 1.9's `mx.contrib.quantization` (kiln.contrib.quantization): int8 inference for
Gluon networks (quantize_net, quantize_net_v2: quantize_net.py) and for symbols with their
parameters (quantize_model, quantize_model_mkldnn, quantize_graph + calib_graph:
quantization_symbol.py), on one mechanism.

MXNet's module has no `__all__`, so `from mxnet.contrib.quantization import *` also gives
the names it imports; its example scripts use some of them (`cpu()`), which are here too.
"""
from ..._core.context import Context, cpu
from ..._core.ndarray import ndarray as NDArray
from ...io.base import DataBatch, DataDesc, DataIter
from ..mod import Module
from ..sym import Symbol
from .quantization_symbol import calib_graph, quantize_graph, quantize_model, \
    quantize_model_mkldnn
from .quantize_net import SMART_MIN_REDUCTION, quantize_net, quantize_net_v2

__all__ = ["quantize_net", "quantize_net_v2", "quantize_model", "quantize_model_mkldnn",
           "quantize_graph", "calib_graph", "SMART_MIN_REDUCTION", "cpu", "Context", "NDArray",
           "DataBatch", "DataDesc", "DataIter", "Module", "Symbol"]
