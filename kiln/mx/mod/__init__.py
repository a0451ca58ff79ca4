"""`kiln.mod`: MXNet 1.x's Module API."""
from .base_module import BaseModule  # noqa: F401
from .module import Module, load_checkpoint  # noqa: F401
from .bucketing_module import BucketingModule  # noqa: F401
