"""MXNet 2.x's home of the evaluation metrics (`gluon.metric`): the same as `kiln.metric`."""
from ..metric import *  # noqa: F401,F403
from ..metric import check_label_shapes  # noqa: F401
