"""MXNet's `mx.contrib.io.DataLoaderIter`: a gluon DataLoader as an mx.io DataIter (for
Module.fit). A short last batch is padded to the batch size (`pad` says by how much)."""
from ... import np as knp
from ...io import DataIter, DataDesc


class DataLoaderIter(DataIter):
    def __init__(self, loader, data_name="data", label_name="softmax_label",
                 dtype="float32"):
        super().__init__()
        self._loader = loader
        data, label = next(iter(loader))
        self.batch_size, self.dtype = data.shape[0], dtype
        self.provide_data = [DataDesc(data_name, tuple(data.shape), dtype)]
        self.provide_label = [DataDesc(label_name, tuple(label.shape), dtype)]
        self._current_batch = None
        self.reset()

    def reset(self):
        self._iter = iter(self._loader)

    def iter_next(self):
        self._current_batch = next(self._iter, None)
        return self._current_batch is not None

    def _padded(self, array):
        array = array.astype(self.dtype)
        if not self.getpad():
            return [array]
        out = knp.zeros((self.batch_size,) + tuple(array.shape[1:]), dtype=self.dtype)
        out[:array.shape[0]] = array
        return [out]

    def getdata(self):
        return self._padded(self._current_batch[0])

    def getlabel(self):
        return self._padded(self._current_batch[1])

    def getpad(self):
        return self.batch_size - self._current_batch[0].shape[0]

    def getindex(self):
        return None
