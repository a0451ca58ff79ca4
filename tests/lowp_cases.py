"""Registry cases for the low-precision primitives (kiln/ops/lowp.py), used by
test_grad_registry.CASES: float32 operands (the ops take nothing else); PyTorch's
bfloat16 rounding as the oracle; no finite differences (rounding is a step function:
the gradient is the float32 product's, by definition)."""
import numpy as onp
import pytest

R = onp.random.default_rng(28)


def _f32(*shape):
    return R.standard_normal(shape).astype(onp.float32)


def _t_matmul_bf16(a, b, transpose_b=False, transpose_a=False):
    torch = pytest.importorskip("torch")
    b = b.transpose(-1, -2) if transpose_b else b
    a = a.transpose(-1, -2) if transpose_a else a
    return torch.matmul(a.to(torch.bfloat16).float(), b.to(torch.bfloat16).float())


def _t_matmul_bf16_bias(a, b, bias, transpose_b=False):
    return _t_matmul_bf16(a, b, transpose_b) + bias


def _t_matmul_bf16_epilogue(a, b, *extra, transpose_b=False, scale=1.0, gelu=False,
                            residual=False):
    """The epilogue the AMP pass folds in: (a @ b + bias) * scale, GELU (erf's), + r."""
    torch = pytest.importorskip("torch")
    y = _t_matmul_bf16(a, b, transpose_b)
    rest = list(extra)
    r = rest.pop() if residual else None
    y = y + rest[0] if rest else y
    y = torch.nn.functional.gelu(y * scale) if gelu else y * scale
    return y if r is None else y + r


def lowp_cases(C):
    return {
        "matmul_bf16": [C(_f32(5, 7), _f32(7, 3), torch=_t_matmul_bf16, fd=False, tol=1e-5),
                        C(_f32(2, 5, 7), _f32(3, 7), transpose_b=True, torch=_t_matmul_bf16,
                          fd=False, tol=1e-5),
                        C(_f32(2, 4, 6), _f32(2, 6, 3), torch=_t_matmul_bf16, fd=False,
                          tol=1e-5),
                        # attention's heads: two batch dims, plain and transposed
                        C(_f32(2, 3, 4, 5), _f32(2, 3, 5, 6), torch=_t_matmul_bf16, fd=False,
                          tol=1e-5),
                        C(_f32(2, 3, 4, 5), _f32(2, 3, 6, 5), transpose_b=True,
                          torch=_t_matmul_bf16, fd=False, tol=1e-5),
                        # Dense with its bias (the AMP pass folds the add in)
                        C(_f32(2, 5, 7), _f32(3, 7), _f32(3), transpose_b=True,
                          torch=_t_matmul_bf16_bias, fd=False, tol=1e-5),
                        # Dense's weight gradient G.T @ X, G read transposed in place
                        C(_f32(9, 4), _f32(9, 6), transpose_a=True, torch=_t_matmul_bf16,
                          fd=False, tol=1e-5),
                        C(_f32(4, 3), _f32(5, 4), transpose_a=True, transpose_b=True,
                          torch=_t_matmul_bf16, fd=False, tol=1e-5),
                        C(_f32(1, 3), _f32(1, 5), transpose_a=True, torch=_t_matmul_bf16,
                          fd=False, tol=1e-5),
                        # attention's gradients: stacks read transposed in place
                        C(_f32(2, 3, 5, 4), _f32(2, 3, 5, 6), transpose_a=True,
                          torch=_t_matmul_bf16, fd=False, tol=1e-5),
                        # the epilogue: attention's scale, Dense + GELU, a residual add
                        C(_f32(2, 3, 4, 5), _f32(2, 3, 6, 5), transpose_b=True, scale=0.125,
                          torch=_t_matmul_bf16_epilogue, fd=False, tol=1e-5),
                        C(_f32(2, 5, 7), _f32(3, 7), _f32(3), transpose_b=True, gelu=True,
                          torch=_t_matmul_bf16_epilogue, fd=False, tol=1e-5),
                        C(_f32(2, 5, 7), _f32(3, 7), _f32(3), _f32(2, 5, 3), transpose_b=True,
                          residual=True, torch=_t_matmul_bf16_epilogue, fd=False, tol=1e-5),
                        C(_f32(5, 7), _f32(7, 3), _f32(5, 3), scale=0.5, gelu=True,
                          residual=True, torch=_t_matmul_bf16_epilogue, fd=False, tol=1e-5)],
    }


def _quantized(w):
    wscale = (onp.abs(w).reshape(w.shape[0], -1).max(axis=1) / 127).astype(onp.float32)
    shape = (-1,) + (1,) * (w.ndim - 1)
    return onp.clip(onp.rint(w / wscale.reshape(shape)), -127, 127).astype(onp.int8), wscale


def int8_cases(C):
    w, wc = _f32(6, 8), _f32(4, 3, 3, 3)
    wq, ws = _quantized(w)
    wcq, wcs = _quantized(wc)
    return {
        "quantize_int8": [C(_f32(3, 5), scale=0.02), C(_f32(4), scale=0.5, dtype="uint8")],
        "dense_int8": [C(_f32(5, 8), wq, ws, _f32(6), x_scale=0.03, fd=False),
                       C(_f32(2, 5, 8), wq, ws, _f32(6), relu=True, fd=False)],
        "conv_int8": [C(_f32(2, 3, 6, 6), wcq, wcs, _f32(4), x_scale=0.03, pad=(1, 1, 1, 1),
                        fd=False)],
    }


def _t_conv_bf16(x, w, stride, dilation, pad, groups=1):
    torch = pytest.importorskip("torch")
    return torch.nn.functional.conv2d(x.to(torch.bfloat16).float(), w.to(torch.bfloat16).float(),
                                      stride=stride, dilation=dilation, padding=pad[0::2],
                                      groups=groups)


def conv_bf16_cases(C):
    a = dict(stride=(1, 1), dilation=(1, 1), pad=(1, 1, 1, 1))
    return {"conv_bf16": [C(_f32(2, 3, 6, 6), _f32(4, 3, 3, 3), **a, torch=_t_conv_bf16,
                            fd=False, tol=1e-4),
                          C(_f32(1, 4, 5, 5), _f32(4, 2, 3, 3), stride=(2, 2), dilation=(1, 1),
                            pad=(0, 0, 0, 0), groups=2, torch=_t_conv_bf16, fd=False, tol=1e-4)]}

