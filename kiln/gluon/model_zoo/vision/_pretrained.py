"""Loading published parameters into a freshly built zoo network."""
import os

from ..model_store import get_model_file


def load_pretrained(net, name, pretrained, ctx, root):
    if pretrained:
        net.load_parameters(get_model_file(name, root=root), ctx=ctx)
    return net


def default_root():
    from ...data.vision.dataset_files import data_dir
    return os.path.join(data_dir(), "models")
