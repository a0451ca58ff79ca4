"""MXNet's gluon.contrib.nn: Concurrent, HybridConcurrent, Identity, PixelShuffle1D/2D/3D,
SyncBatchNorm and SparseEmbedding.

SyncBatchNorm is BatchNorm over this process's batch: within one process that is the
synchronized statistic MXNet computes across devices; in an MPI job (kiln.distributed) each
rank normalizes over its own batch, as BatchNorm does there. kiln has no sparse gradients, so
SparseEmbedding is an Embedding whose gradient is dense.
"""
from ... import np as knp
from ..._core.base import KilnError
from ..nn.basic_layers import Concatenate, HybridConcatenate, Embedding, Identity  # noqa
from ..nn.norm_layers import BatchNorm
from ..block import HybridBlock


class Concurrent(Concatenate):
    """Runs each child on the input and concatenates the outputs along `axis` (-1)."""


class HybridConcurrent(HybridConcatenate):
    """The hybridizable Concurrent."""


class SyncBatchNorm(BatchNorm):
    """BatchNorm across devices; kiln's devices share one process, so exactly BatchNorm
    (num_devices is accepted and not needed)."""

    def __init__(self, in_channels=0, num_devices=None, momentum=0.9, epsilon=1e-5,
                 center=True, scale=True, use_global_stats=False, beta_initializer="zeros",
                 gamma_initializer="ones", running_mean_initializer="zeros",
                 running_variance_initializer="ones", **kwargs):
        super().__init__(axis=1, momentum=momentum, epsilon=epsilon, center=center,
                         scale=scale, use_global_stats=use_global_stats,
                         beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer,
                         running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer,
                         in_channels=in_channels, **kwargs)


class SparseEmbedding(Embedding):
    """Embedding(input_dim, output_dim); the gradient is dense in kiln."""

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None,
                 **kwargs):
        super().__init__(input_dim, output_dim, dtype=dtype,
                         weight_initializer=weight_initializer, **kwargs)


class _PixelShuffle(HybridBlock):
    """(N, C*f1*...*fk, D1..Dk) -> (N, C, D1*f1, ..., Dk*fk), k = 1, 2 or 3."""
    rank = 0

    def __init__(self, factor, **kwargs):
        super().__init__(**kwargs)
        factors = (factor,) * self.rank if isinstance(factor, int) else tuple(factor)
        if len(factors) != self.rank or any(int(f) < 1 for f in factors):
            raise KilnError(f"{type(self).__name__}: factor must be a positive int or "
                            f"{self.rank} of them, got {factor!r}")
        self._factors = tuple(int(f) for f in factors)

    def forward(self, x):
        k = self.rank
        if x.ndim != k + 2:
            raise KilnError(f"{type(self).__name__}: expected a {k + 2}-d input, got shape "
                            f"{x.shape}")
        n, c = x.shape[:2]
        spatial = tuple(x.shape[2:])
        block = 1
        for f in self._factors:
            block *= f
        if c % block:
            raise KilnError(f"{type(self).__name__}: {c} channels are not divisible by "
                            f"{'*'.join(map(str, self._factors))} = {block}")
        x = knp.reshape(x, (n, c // block) + self._factors + spatial)
        # (N, C, f1..fk, D1..Dk) -> (N, C, D1, f1, ..., Dk, fk)
        axes = (0, 1) + tuple(a for i in range(k) for a in (2 + k + i, 2 + i))
        x = knp.transpose(x, axes)
        return knp.reshape(x, (n, c // block) + tuple(d * f for d, f in
                                                       zip(spatial, self._factors)))

    def __repr__(self):
        return f"{type(self).__name__}({self._factors})"


class PixelShuffle1D(_PixelShuffle):
    """Moves channels into width: (N, C * f, W) becomes (N, C, W * f) for the factor f."""
    rank = 1


class PixelShuffle2D(_PixelShuffle):
    """Moves channels into space: (N, C * f1 * f2, H, W) becomes (N, C, H * f1, W * f2) for the
    factors (f1, f2)."""
    rank = 2


class PixelShuffle3D(_PixelShuffle):
    """Moves channels into space: (N, C * f1 * f2 * f3, D, H, W) becomes (N, C, D * f1, H * f2, W *
    f3)."""
    rank = 3
