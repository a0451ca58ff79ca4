"""MXNet's gluon.contrib.estimator: fit a Gluon net with event handlers (MXNet 1.6+)."""
from .estimator import Estimator  # noqa: F401
from .batch_processor import BatchProcessor  # noqa: F401
from .event_handler import (EventHandler, TrainBegin, TrainEnd, EpochBegin,  # noqa: F401
                            EpochEnd, BatchBegin, BatchEnd, StoppingHandler, MetricHandler,
                            ValidationHandler, LoggingHandler, CheckpointHandler,
                            EarlyStoppingHandler, GradientUpdateHandler)
