"""npx.random: MXNet's extension random functions (seed, bernoulli)."""
from ..np.random import seed as _seed, bernoulli  # noqa: F401


def seed(seed=None, ctx=None):
    """Seed kiln's one generator (the same one np.random uses)."""
    _seed(seed)
