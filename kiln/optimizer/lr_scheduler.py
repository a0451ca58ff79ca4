"""Learning-rate schedules with MXNet's semantics: called with the update count, return lr.

`Optimizer(lr_scheduler=...)` sets the scheduler's `base_lr` to the optimizer's learning rate.
Factor schedulers are stateful (they remember how far they have decayed), as in MXNet.
"""
import math

from .._core.base import KilnError


class LRScheduler:
    """Base class: optional warm-up over the first `warmup_steps` updates."""

    def __init__(self, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0.0, warmup_mode="linear"):
        if warmup_mode not in ("linear", "constant"):
            raise KilnError(f"warmup_mode must be 'linear' or 'constant', got {warmup_mode!r}")
        if warmup_steps < 0:
            raise KilnError(f"warmup_steps must be >= 0, got {warmup_steps}")
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.warmup_begin_lr = warmup_begin_lr
        self.warmup_final_lr = base_lr
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update):
        if self.warmup_mode == "constant":
            return self.warmup_begin_lr
        span = self.warmup_final_lr - self.warmup_begin_lr
        return self.warmup_begin_lr + span * num_update / self.warmup_steps

    def __call__(self, num_update):
        raise NotImplementedError


class FactorScheduler(LRScheduler):
    """Multiply the rate by `factor` every `step` updates, never below `stop_factor_lr`."""

    def __init__(self, step, factor=1.0, stop_factor_lr=1e-8, base_lr=0.01, **warmup):
        super().__init__(base_lr, **warmup)
        if step < 1:
            raise KilnError(f"FactorScheduler: step must be >= 1, got {step}")
        if factor > 1.0:
            raise KilnError(f"FactorScheduler: factor must be <= 1 to decay, got {factor}")
        self.step, self.factor, self.stop_factor_lr = step, factor, stop_factor_lr
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr = max(self.base_lr * self.factor, self.stop_factor_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply the rate by `factor` after each update count listed in `step`."""

    def __init__(self, step, factor=1.0, base_lr=0.01, **warmup):
        super().__init__(base_lr, **warmup)
        step = list(step)
        if not step or any(b <= a for a, b in zip(step, step[1:])) or step[0] < 1:
            raise KilnError(f"MultiFactorScheduler: step must be increasing positive "
                            f"integers, got {step}")
        self.step, self.factor = step, factor
        self.cur_step_ind = 0
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
        return self.base_lr


class CosineScheduler(LRScheduler):
    """Cosine decay from base_lr to final_lr over `max_update` updates (after warm-up)."""

    def __init__(self, max_update, base_lr=0.01, final_lr=0.0, **warmup):
        super().__init__(base_lr, **warmup)
        if max_update < 1:
            raise KilnError(f"CosineScheduler: max_update must be >= 1, got {max_update}")
        self.max_update, self.final_lr = max_update, final_lr
        self.max_steps = max_update - self.warmup_steps

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update > self.max_update:
            return self.final_lr
        frac = (num_update - self.warmup_steps) / max(self.max_steps, 1)
        return self.final_lr + (self.base_lr - self.final_lr) * (1 + math.cos(math.pi * frac)) / 2


class PolyScheduler(LRScheduler):
    """final_lr + (base_lr - final_lr) * (1 - t / max_steps)^pwr over the updates after
    the warm-up (max_steps = max_update - warmup_steps); final_lr after max_update."""

    def __init__(self, max_update, base_lr=0.01, pwr=2, final_lr=0, **warmup):
        super().__init__(base_lr, **warmup)
        if not isinstance(max_update, int) or max_update < 1:
            raise KilnError(f"PolyScheduler: max_update must be a positive int, got "
                            f"{max_update!r}")
        self.power, self.final_lr, self.max_update = pwr, final_lr, max_update
        self.base_lr_orig = base_lr
        self.max_steps = max_update - self.warmup_steps

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            done = (num_update - self.warmup_steps) / self.max_steps
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * \
                (1 - done) ** self.power
        return self.base_lr
