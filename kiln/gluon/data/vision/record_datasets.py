"""Datasets over MXNet RecordIO files: RecordFileDataset (raw records) and
ImageRecordDataset (image records as im2rec writes them), as in MXNet's gluon.data."""
import os

from ..dataset import Dataset


class RecordFileDataset(Dataset):
    """The records of a .rec file, by position; its index is the .idx file beside it.
    Each item is the record's bytes. Worker processes reopen the file on first use."""

    def __init__(self, filename):
        from ....data import recordio
        self.filename = os.fspath(filename)
        self.idx_file = os.path.splitext(self.filename)[0] + ".idx"
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")

    def __len__(self):
        return len(self._record.keys)

    def __getitem__(self, idx):
        return self._record.read_idx(self._record.keys[idx])


class ImageRecordDataset(RecordFileDataset):
    """Image records: each item is (image, label). The image is decoded to an (H, W, 3) RGB
    uint8 kiln array ((H, W, 1) with flag=0); the label is the header's float, or its float32
    vector for multi-label records. `transform(image, label)` is applied when given."""

    def __init__(self, filename, flag=1, transform=None):
        super().__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx):
        from ....data import image, recordio
        header, payload = recordio.unpack(super().__getitem__(idx))
        img = image.imdecode(payload, self._flag)
        if self._transform is not None:
            return self._transform(img, header.label)
        return img, header.label
