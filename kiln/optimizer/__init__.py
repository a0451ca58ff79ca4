"""Optimizers (MXNet's `mxnet.optimizer`): each updates NumPy buffers in place."""
from .base import Optimizer, create, register, registered  # noqa: F401
from .sgd import (SGD, NAG, sgd_update, nag_update, ccSGD, Signum, SGLD,  # noqa: F401
                  DCASGD)
from .adam import Adam, AdamW, adam_update, Adamax, Nadam  # noqa: F401
from .adaptive import AdaGrad, RMSProp, AdaDelta, Ftrl, FTML  # noqa: F401
from .large_batch import LAMB, LARS, LBSGD  # noqa: F401
from .eager import Test  # noqa: F401
from .updater import Updater, get_updater  # noqa: F401,E402
