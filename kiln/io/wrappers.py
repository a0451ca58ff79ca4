"""Iterators over other iterators: ResizeIter and PrefetchingIter, as in MXNet 1.x."""
from .._core.base import KilnError, where_in_user_code
from .base import BatchHoldingIter, DataBatch, DataDesc


class ResizeIter(BatchHoldingIter):
    """`size` batches per epoch from `data_iter`, restarting it whenever it runs out."""

    def __init__(self, data_iter, size, reset_internal=True):
        super().__init__()
        self.data_iter, self.size, self.reset_internal = data_iter, size, reset_internal
        self.cur = 0
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self):
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True


class PrefetchingIter(BatchHoldingIter):
    """Joins the batches of one or more iterators (data and labels concatenated in order),
    with optional renaming of their inputs. MXNet reads one batch ahead in a thread per
    iterator; kiln reads on demand in the caller's thread, which yields the same batches
    (only the inner iterators' own state is never a batch ahead)."""

    def __init__(self, iters, rename_data=None, rename_label=None):
        super().__init__()
        self.iters = list(iters) if isinstance(iters, (list, tuple)) else [iters]
        if not self.iters:
            raise KilnError("PrefetchingIter: no iterators given" + where_in_user_code())
        self.n_iter = len(self.iters)
        self.rename_data, self.rename_label = rename_data, rename_label
        self.batch_size = self.provide_data[0][1][0]

    @staticmethod
    def _renamed(descs_per_iter, renames):
        if renames is None:
            return sum(descs_per_iter, [])
        return sum([[DataDesc(r[d.name], d.shape, d.dtype) if isinstance(d, DataDesc)
                     else DataDesc(*d) for d in descs]
                    for r, descs in zip(renames, descs_per_iter)], [])

    @property
    def provide_data(self):
        return self._renamed([i.provide_data for i in self.iters], self.rename_data)

    @property
    def provide_label(self):
        return self._renamed([i.provide_label for i in self.iters], self.rename_label)

    def reset(self):
        for i in self.iters:
            i.reset()

    def iter_next(self):
        batches = []
        for i in self.iters:
            try:
                batches.append(i.next())
            except StopIteration:
                batches.append(None)
        if batches[0] is None or None in batches:
            if any(b is not None for b in batches):
                raise KilnError("PrefetchingIter: the iterators ran out after different "
                                "numbers of batches" + where_in_user_code())
            return False
        if any(b.pad != batches[0].pad for b in batches):
            raise KilnError(f"PrefetchingIter: the iterators' batches differ in padding "
                            f"({[b.pad for b in batches]})" + where_in_user_code())
        self.current_batch = DataBatch(sum([list(b.data) for b in batches], []),
                                       sum([list(b.label or []) for b in batches], []),
                                       batches[0].pad, batches[0].index,
                                       provide_data=self.provide_data,
                                       provide_label=self.provide_label)
        return True
