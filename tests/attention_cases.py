"""Registry cases for the attention primitive (kiln/ops/attention.py), used by
test_grad_registry.CASES: float64 inputs, PyTorch's scaled_dot_product_attention as the
oracle for the unmasked and the masked forms whose rows all keep a key."""
import math

import numpy as onp
import pytest

R = onp.random.default_rng(27)


def _t_sdpa(q, k, v, mask, scale, divide, fill, zero_masked, floor):
    torch = pytest.importorskip("torch")
    s = 1.0 / scale if divide else scale
    m = None if mask.ndim == 0 else mask
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=s)


def attention_cases(C):
    def u(*s):
        return R.uniform(-1, 1, s)
    plain = dict(scale=math.sqrt(4), divide=True, fill=-onp.inf, zero_masked=False, floor=0.0)
    masked = dict(scale=0.5, divide=False, fill=-onp.inf, zero_masked=True, floor=1e-30)
    d2l = dict(scale=2.0, divide=True, fill=-1e6, zero_masked=False, floor=0.0)
    keep = R.integers(0, 2, (2, 1, 3, 5)).astype(bool)
    keep[..., 0] = True                       # every query keeps a key (PyTorch's NaN rows)
    empty = keep.copy()
    empty[0, 0, 1] = False                    # a query with no key: zeros
    return {"attention": [
        C(u(2, 3, 3, 4), u(2, 3, 5, 4), u(2, 3, 5, 2), onp.array(True), **plain,
          torch=_t_sdpa),
        C(u(2, 3, 3, 4), u(2, 3, 5, 4), u(2, 3, 5, 2), keep, **masked, torch=_t_sdpa),
        C(u(2, 3, 3, 4), u(2, 3, 5, 4), u(2, 3, 5, 2), empty, **masked),
        C(u(4, 3, 4), u(4, 1, 4), u(4, 1, 3), R.integers(0, 2, (4, 3, 1)).astype(bool), **d2l),
    ]}
