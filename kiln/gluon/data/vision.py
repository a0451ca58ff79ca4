"""`gluon.data.vision.datasets`: image data sets that need no download."""
import types

from ...data.digits import Digits

# MXNet code writes gluon.data.vision.datasets.MNIST(...); kiln only ships the bundled digits
datasets = types.SimpleNamespace(Digits=Digits)
