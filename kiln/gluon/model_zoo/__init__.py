"""gluon.model_zoo: MXNet's predefined vision networks, with its parameter names, so that
MXNet's pretrained `.params` files load into them."""
from . import vision, model_store  # noqa: F401
