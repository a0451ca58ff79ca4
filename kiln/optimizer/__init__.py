"""Optimizers (MXNet's `mxnet.optimizer`): each updates NumPy buffers in place."""
from .base import Optimizer, create, register, registered  # noqa: F401
from .sgd import SGD, NAG, sgd_update, nag_update  # noqa: F401
from .adam import Adam, AdamW, adam_update  # noqa: F401
from .adaptive import AdaGrad, RMSProp, AdaDelta  # noqa: F401
from .updater import Updater, get_updater  # noqa: F401,E402
from .more import (Adamax, Nadam, Ftrl, FTML, LAMB, LARS, Signum, SGLD,  # noqa: F401,E402
                   DCASGD, ccSGD, LBSGD, Test)
