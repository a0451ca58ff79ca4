"""Normalization layers: BatchNorm (and BatchNormReLU), LayerNorm, GroupNorm, InstanceNorm."""
from ... import npx
from ..._core.base import KilnError, where_in_user_code
from ..block import HybridBlock
from ..parameter import Parameter


class _AffineNorm(HybridBlock):
    """gamma/beta of shape (in_channels,); scale=False / center=False freeze them."""

    def __init__(self, center, scale, beta_initializer, gamma_initializer, in_channels,
                 **kwargs):
        super().__init__(**kwargs)
        self._center, self._scale = center, scale
        self.gamma = Parameter("gamma", grad_req="write" if scale else "null",
                               shape=(in_channels,), init=gamma_initializer,
                               allow_deferred_init=True, differentiable=scale)
        self.beta = Parameter("beta", grad_req="write" if center else "null",
                              shape=(in_channels,), init=beta_initializer,
                              allow_deferred_init=True, differentiable=center)

    def _channel_axis(self, x):
        return self._axis % x.ndim

    def infer_shape(self, x, *args):
        c = x.shape[self._channel_axis(x)]
        for p in self._reg_params.values():
            p.shape = (c,)

    def _check_channels(self, x):
        c = x.shape[self._channel_axis(x)]
        expected = self.gamma.shape[0]
        if c != expected:
            raise KilnError(f"{self.name} ({type(self).__name__}): expected {expected} "
                            f"channels on axis {self._axis}, got input of shape "
                            f"{tuple(x.shape)}{where_in_user_code()}")

    def __repr__(self):
        c = self.gamma.shape[0]
        return (f"{type(self).__name__}(axis={self._axis}, eps={self._epsilon}, "
                f"in_channels={c if c else None})")


class BatchNorm(_AffineNorm):
    """Normalizes over the batch; keeps running_mean/running_var for predict mode.

    In training (autograd.record) the batch statistics are used and the running ones are
    updated in place: running = momentum * running + (1 - momentum) * batch.
    """

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones",
                 in_channels=0, **kwargs):
        super().__init__(center, scale, beta_initializer, gamma_initializer, in_channels,
                         **kwargs)
        self._axis, self._momentum, self._epsilon = axis, momentum, epsilon
        self._use_global_stats = use_global_stats
        self.running_mean = Parameter("running_mean", grad_req="null", shape=(in_channels,),
                                      init=running_mean_initializer, allow_deferred_init=True,
                                      differentiable=False)
        self.running_var = Parameter("running_var", grad_req="null", shape=(in_channels,),
                                     init=running_variance_initializer,
                                     allow_deferred_init=True, differentiable=False)

    def forward(self, x):
        self._check_channels(x)
        # the running arrays are passed as they are: batch_norm writes into them in place
        return npx.batch_norm(x, self.gamma.data(), self.beta.data(), self.running_mean.data(),
                              self.running_var.data(), eps=self._epsilon,
                              momentum=self._momentum, fix_gamma=not self._scale,
                              use_global_stats=self._use_global_stats, axis=self._axis)


class BatchNormReLU(BatchNorm):
    """BatchNorm followed by ReLU, with BatchNorm's parameters (MXNet fuses the two)."""

    def forward(self, x):
        return npx.relu(super().forward(x))


class LayerNorm(_AffineNorm):
    """Normalizes each sample over `axis` (the last one by default)."""

    def __init__(self, axis=-1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", in_channels=0, **kwargs):
        super().__init__(center, scale, beta_initializer, gamma_initializer, in_channels,
                         **kwargs)
        self._axis, self._epsilon = axis, epsilon

    def forward(self, x):
        self._check_channels(x)
        return npx.layer_norm(x, self.gamma.data(), self.beta.data(), axis=self._axis,
                              eps=self._epsilon)


class GroupNorm(_AffineNorm):
    """Normalizes each sample over groups of channels (axis 1)."""

    def __init__(self, num_groups=1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", in_channels=0, **kwargs):
        super().__init__(center, scale, beta_initializer, gamma_initializer, in_channels,
                         **kwargs)
        self._axis, self._epsilon, self._num_groups = 1, epsilon, num_groups

    def forward(self, x):
        self._check_channels(x)
        if x.shape[1] % self._num_groups:
            raise KilnError(f"{self.name} (GroupNorm): {x.shape[1]} channels do not split "
                            f"into {self._num_groups} groups{where_in_user_code()}")
        return npx.group_norm(x, self.gamma.data(), self.beta.data(),
                              num_groups=self._num_groups, eps=self._epsilon)


class InstanceNorm(_AffineNorm):
    """Normalizes each sample and channel over the spatial dims (channels on axis 1)."""

    def __init__(self, axis=1, epsilon=1e-5, center=True, scale=False,
                 beta_initializer="zeros", gamma_initializer="ones", in_channels=0, **kwargs):
        super().__init__(center, scale, beta_initializer, gamma_initializer, in_channels,
                         **kwargs)
        if axis != 1:
            raise KilnError(f"InstanceNorm: only axis=1 (channels first) is supported, got "
                            f"{axis}{where_in_user_code()}")
        self._axis, self._epsilon = axis, epsilon

    def forward(self, x):
        self._check_channels(x)
        return npx.group_norm(x, self.gamma.data(), self.beta.data(), num_groups=x.shape[1],
                              eps=self._epsilon)
