"""ONNX lowerings of kiln's int8 primitives (kiln/ops/quantized.py) as QuantizeLinear /
DequantizeLinear pairs around the float op, the QDQ form ONNX Runtime runs (and fuses
into its integer kernels): x -> Q(x_scale) -> DQ; the int8 weight -> DQ(per output
channel, axis 0); then MatMul / Conv, the bias, a residual, ReLU, and for an int8 chain
Q(out_scale) into the next layer, which dequantizes it. A dynamic layer (no calibrated
scale) computes its scale in the graph: max|x| / 127. (matmul_bf16 needs nothing here:
the onnx pipeline expands it into casts through bfloat16.)
"""
import numpy as _np

ZERO = {"int8": _np.int8, "uint8": _np.uint8}


def _activation(em, node, x):
    """x quantized and dequantized as the layer's int8 kernel reads it."""
    a = node.attrs
    zero = em.const(_np.array(0, ZERO[a.get("dtype", "int8")]))
    if a.get("x_scale") is None:
        top = em.op("ReduceMax", [em.op("Abs", [x])], keepdims=0)
        scale = em.op("Max", [em.op("Div", [top, em.const(_np.array(127.0, _np.float32))]),
                              em.const(_np.array(1e-30, _np.float32))])
    else:
        scale = em.const(_np.array(a["x_scale"], _np.float32))
    return em.op("DequantizeLinear", [em.op("QuantizeLinear", [x, scale, zero]), scale, zero])


def _weight(em, node, wq, wscale):
    channels = node.inputs[1].shape[0]
    return em.op("DequantizeLinear", [wq, wscale, em.const(_np.zeros(channels, _np.int8))],
                 axis=0)


def _relu(em, node, y):
    return em.op("Relu", [y]) if node.attrs.get("relu") else y


def _quantize_int8(em, node, ins):
    a = node.attrs
    return em.op("QuantizeLinear", [ins[0], em.const(_np.array(a["scale"], _np.float32)),
                                    em.const(_np.array(0, ZERO[a.get("dtype", "int8")]))])


def _dense_int8(em, node, ins):
    x, wq, wscale, bias = ins
    w = em.op("Transpose", [_weight(em, node, wq, wscale)], perm=[1, 0])
    y = em.op("Add", [em.op("MatMul", [_activation(em, node, x), w]), bias])
    return _relu(em, node, y)


def _conv_int8(em, node, ins):
    x, wq, wscale, bias = ins[:4]
    a = node.attrs
    pad = a["pad"]
    if node.inputs[0].dtype != _np.float32:     # quantized by the layer before
        x = _dequantize(em, x, a["x_scale"], a["dtype"])
    else:
        x = _activation(em, node, x)
    y = em.op("Conv", [x, _weight(em, node, wq, wscale), bias],
              strides=list(a["stride"]), dilations=list(a["dilation"]),
              pads=list(pad[0::2]) + list(pad[1::2]), group=int(a.get("groups", 1)))
    if len(ins) == 5:
        r = node.inputs[4]
        residual = ins[4] if r.dtype == _np.float32 else _dequantize(
            em, ins[4], a["residual_scale"], str(r.dtype))
        y = em.op("Add", [y, residual])
    y = _relu(em, node, y)
    if a.get("out_scale") is not None:      # requantized for the next layer
        # as the kernel does it (ops/quantized.py requantized): times the float32
        # reciprocal of the scale, then rounded; QuantizeLinear(out_scale) would divide
        inverse = _np.float32(1.0) / _np.float32(a["out_scale"])
        y = em.op("QuantizeLinear", [em.op("Mul", [y, em.const(_np.array(inverse))]),
                                     em.const(_np.array(1.0, _np.float32)),
                                     em.const(_np.array(0, ZERO[a["out_dtype"]]))])
    return y


def _dequantize(em, q, scale, dtype):
    return em.op("DequantizeLinear", [q, em.const(_np.array(scale, _np.float32)),
                                      em.const(_np.array(0, ZERO[dtype]))])


LOWERINGS = {"quantize_int8": _quantize_int8, "dense_int8": _dense_int8,
             "conv_int8": _conv_int8}
