"""Adam (L2 weight decay folded into the gradient) and AdamW (decoupled weight decay).

Both follow PyTorch's arithmetic exactly, which is the Adam paper's:
    m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2
    w -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
MXNet folds the bias correction into the learning rate instead and so adds eps to the
uncorrected sqrt(v); the two differ only by eps * sqrt(1-b2^t), far below float32 noise for
the default eps.  AdamW decays first, as torch.optim.AdamW does: w -= lr * wd * w.

The per-step scalars (bias corrections, step size) are computed in Python by `scalars`; the
array arithmetic in `adam_update` uses only operators, so it runs on NumPy buffers eagerly
and on kiln symbols inside a compiled training step.
"""
import math

from .._core import aligned
from .base import Optimizer, register


def adam_scalars(lr, wd, t, beta1, beta2, decoupled_wd):
    return {"step": lr / (1.0 - beta1 ** t),
            "inv_bias2": 1.0 / math.sqrt(1.0 - beta2 ** t),
            "wd": wd,
            "decay": 1.0 - lr * wd if decoupled_wd else 1.0}


def adam_update(weight, grad, mean, var, s, beta1, beta2, epsilon, use_wd, decoupled_wd):
    """One Adam/AdamW step, in place on weight, mean and var; `s` from adam_scalars."""
    if use_wd and decoupled_wd:
        weight *= s["decay"]
    elif use_wd:
        grad = grad + weight * s["wd"]
    mean *= beta1
    mean += (1.0 - beta1) * grad
    var *= beta2
    var += (1.0 - beta2) * (grad * grad)
    denom = var ** 0.5 * s["inv_bias2"]
    denom += epsilon
    weight -= s["step"] * (mean / denom)


@register
class Adam(Optimizer):
    """Adam: adaptive moment estimation with bias correction."""

    decoupled_wd = False

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=False, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self.lazy_update = lazy_update  # accepted; kiln has no sparse gradients

    def create_state(self, index, weight):
        return (aligned.zeros(weight.shape, weight.dtype),
                aligned.zeros(weight.shape, weight.dtype))

    def scalars(self, lr, wd, t):
        return adam_scalars(lr, wd, t, self.beta1, self.beta2, self.decoupled_wd)

    def apply(self, weight, grad, state, s):
        mean, var = state
        adam_update(weight, grad, mean, var, s, self.beta1, self.beta2, self.epsilon,
                    use_wd=bool(self.wd), decoupled_wd=self.decoupled_wd)


@register
class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), as torch.optim.AdamW."""

    decoupled_wd = True
