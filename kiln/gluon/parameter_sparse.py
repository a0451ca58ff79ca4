"""MXNet 1.x's sparse storage of a Gluon Parameter (`stype='row_sparse'`): its rows come
through `row_sparse_data(row_id)` once a Trainer holds it (MXNet pulls them from the
kvstore; kiln keeps one copy and takes the rows asked for), never through `data()`."""
from .._core.ndarray import ndarray


class SparseStorage:
    """What Parameter adds for a row_sparse parameter (its `_stype`, `_trainer`, `_data`,
    `_ctx_list` and `_check_initialized` are Parameter's)."""

    def _set_trainer(self, trainer):
        """The Trainer made with this parameter (MXNet: a sparse one takes only one)."""
        if self._stype != "default" and self._trainer is not None and trainer is not None \
                and self._trainer is not trainer:
            raise RuntimeError(f"Failed to set the trainer for Parameter '{self.name}' because "
                               f"it was already set. More than one trainers for a "
                               f"{self._stype} Parameter is not supported.")
        self._trainer = trainer

    def row_sparse_data(self, row_id):
        """A row_sparse parameter's rows `row_id` (a row_sparse copy, on row_id's context)."""
        if self._stype != "row_sparse":
            raise RuntimeError(f"Cannot return a copy of Parameter {self.name} via "
                               f"row_sparse_data() because its storage type is {self._stype}. "
                               f"Please use data() instead.")
        return self._rows_of(row_id, row_id.ctx)

    def list_row_sparse_data(self, row_id):
        """row_sparse_data(row_id) on each of the parameter's contexts."""
        if self._stype != "row_sparse":
            raise RuntimeError(f"Cannot return copies of Parameter '{self.name}' on all "
                               f"contexts via list_row_sparse_data() because its storage type "
                               f"is {self._stype}. Please use data() instead.")
        return [self._rows_of(row_id, c) for c in self._ctx_list]

    def _rows_of(self, row_id, ctx):
        if not isinstance(row_id, ndarray):
            raise TypeError(f"row_id must have NDArray type, but {type(row_id)} is given")
        if self._trainer is None:
            raise RuntimeError(f"Cannot get row_sparse data for Parameter '{self.name}' when "
                               f"no Trainer is created with it.")
        self._check_initialized()
        rows = self._data.retain(row_id)    # MXNet's row_sparse_pull: the rows asked for
        rows._ctx = ctx
        return rows
