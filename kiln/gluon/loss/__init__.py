"""Losses (MXNet's gluon.loss): HybridBlocks returning one loss per sample, shape (batch,).

Every loss is composed from kiln.np / kiln.npx functions, so it differentiates, traces and
compiles like any other block. Conventions follow MXNet: `weight` scales the loss,
`sample_weight` multiplies it elementwise (broadcast), and the result is averaged over every
axis except `batch_axis` (base.py). The losses by topic: regression.py, classification.py,
embedding.py (pairs and triplets of embeddings) and ctc.py (sequence labelling).
"""
from .base import Loss  # noqa: F401
from .regression import L2Loss, L1Loss, HuberLoss, PoissonNLLLoss  # noqa: F401
from .classification import (SoftmaxCrossEntropyLoss, SoftmaxCELoss,  # noqa: F401
                             SigmoidBinaryCrossEntropyLoss, SigmoidBCELoss, LogisticLoss,
                             HingeLoss, SquaredHingeLoss, KLDivLoss)
from .embedding import CosineEmbeddingLoss, SDMLLoss, TripletLoss  # noqa: F401
from .ctc import CTCLoss  # noqa: F401
