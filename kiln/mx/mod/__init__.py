"""`kiln.mod`: MXNet 1.x's Module API."""
from .module import Module, load_checkpoint  # noqa: F401
from .bucketing_module import BucketingModule  # noqa: F401
