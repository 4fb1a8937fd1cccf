"""ElasticSampler: a torch Sampler over the C++ exactly-once elastic sampler.

Each epoch's order is a permutation keyed by (seed, epoch); the samples not yet committed are
split over the current world, and every ``State.commit()`` merges the samples the ranks recorded
(``record_batch`` / ``record_indices``), so across failures and changes of world size the committed
history trains each sample of an epoch exactly once. Track the sampler in the State
(``TorchState(..., train_sampler=sampler)``) so that commits, restores and syncs reach it.

Iterating yields this rank's share as it was when the partition was last made (construction,
``set_epoch``, or the State's restore or sync), as Horovod's sampler does; ``record_batch(i, n)``
refers to the i-th batch of n of that list. The shares of the ranks differ by at most one sample,
so with a DataLoader the ranks may see different numbers of batches: ``num_batches(batch_size)``
is the same on every rank (ranks with less left get short or empty batches through
``batches(batch_size)``), or let a rank that runs out call ``hvd.join()``.
"""

import collections.abc

import torch.utils.data

from cohort import _C


class ElasticSampler(torch.utils.data.Sampler):
    """Samples ``range(len(dataset))`` exactly once per epoch across failures and resizes.

    ``shuffle=False`` yields this rank's share in ascending order; the split over the ranks still
    follows the permutation keyed by ``seed``.
    """

    def __init__(self, dataset, shuffle=True, seed=0):
        # torch never used the data source: 1.13 requires the argument, 2.x warns when it is given,
        # and 2.15's Sampler has no __init__ of its own (object's takes none).
        if torch.utils.data.Sampler.__init__ is object.__init__:
            super().__init__()
        else:
            super().__init__(None)
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self._core = _C.ElasticSampler(len(dataset), seed)
        self._indices = None
        self._recorded = set()
        self._committed_cache = None

    # --- the partition --------------------------------------------------------------------------

    def _invalidate(self):
        """The C++ sampler made a new partition (restore, sync, set_epoch)."""
        self._indices = None
        self._recorded = set()

    def _partition(self):
        if self._indices is None:
            indices = [int(i) for i in self._core.unprocessed_indices()]
            self._indices = sorted(indices) if not self.shuffle else indices
            self._recorded = set()
        return self._indices

    def reset(self):
        """Forgets the cached share; the next iteration reads it from the C++ sampler again."""
        self._invalidate()

    @property
    def epoch(self):
        """The epoch set last."""
        return self._core.epoch

    def set_epoch(self, epoch):
        """Starts ``epoch`` with nothing processed (the current epoch again keeps progress)."""
        self._core.set_epoch(epoch)
        self._invalidate()

    # --- torch Sampler --------------------------------------------------------------------------

    def __iter__(self):
        return iter(list(self._partition()))

    def __len__(self):
        return len(self._partition())

    # --- recording progress ---------------------------------------------------------------------

    def get_indices(self, batch_idx, batch_size):
        """The samples of batch ``batch_idx`` (of ``batch_size``) of this rank's share."""
        indices = self._partition()
        start = batch_idx * batch_size
        return indices[start:min(start + batch_size, len(indices))]

    def record_batch(self, batch_idx, batch_size):
        """Marks batch ``batch_idx`` of this rank's share as trained (committed at the next commit)."""
        self.record_indices(self.get_indices(batch_idx, batch_size))

    def record_indices(self, indices):
        """Marks samples of this rank's share as trained; ones recorded already are ignored."""
        self._partition()
        fresh = []
        for index in indices:
            index = int(index)
            if index in self._recorded or self._core.is_committed(index):
                continue
            fresh.append(index)
            self._recorded.add(index)
        if fresh:
            try:
                self._core.record(fresh)
            except Exception:
                self._recorded.difference_update(fresh)
                raise

    # --- equal steps on every rank --------------------------------------------------------------

    def num_batches(self, batch_size):
        """How many batches of ``batch_size`` every rank takes this epoch (the same everywhere)."""
        return self._core.steps(batch_size)

    def batches(self, batch_size):
        """This rank's unrecorded samples in ``num_batches(batch_size)`` lists, some maybe empty."""
        return [[int(i) for i in batch] for batch in self._core.batches(batch_size)]

    # --- counters -------------------------------------------------------------------------------

    def remaining(self):
        """Samples of this rank's share not recorded yet."""
        return self._core.remaining()

    def unprocessed(self):
        """Samples of this epoch not committed (the same on every rank)."""
        return self._core.unprocessed()

    def uncommitted(self):
        """Samples recorded on this rank since the last commit."""
        return self._core.uncommitted()

    # --- state dict ---------------------------------------------------------------------------

    def _committed_key(self):
        """(epoch, committed samples): what identifies the committed set. Within an epoch the set
        only grows, every rank holds the same one, and sync adopts rank 0's."""
        return (self._core.epoch, self._core.dataset_size - self._core.unprocessed())

    def _committed_list(self):
        """This epoch's committed samples, ascending: one pass over the data set, made at most
        once per committed set (cached until a commit, sync or set_epoch changes it)."""
        key = self._committed_key()
        if self._committed_cache is None or self._committed_cache[0] != key:
            is_committed = self._core.is_committed
            self._committed_cache = (key, [i for i in range(self._core.dataset_size)
                                           if is_committed(i)])
        return self._committed_cache[1]

    def state_dict(self):
        """The epoch and the committed samples of it (uncommitted records are not part of it).

        Costs the same whatever the data set's size: ``processed_indices`` is listed when first
        read (``len()`` does not list it), so it must be read before the next commit, sync or
        ``set_epoch`` changes the committed set (it raises RuntimeError after that).
        """
        return {
            "epoch": self._core.epoch,
            "seed": self._core.seed,
            "dataset_size": self._core.dataset_size,
            "processed_indices": CommittedIndices(self, *self._committed_key()),
        }

    def load_state_dict(self, state_dict):
        """Returns to a state from ``state_dict()``.

        The C++ sampler takes committed samples only through a State commit, sync or checkpoint;
        so this loads a state whose committed set is the current one, or a fresh epoch, and raises
        NotImplementedError otherwise (carry progress with the State instead).
        """
        if state_dict["seed"] != self._core.seed or \
                state_dict["dataset_size"] != self._core.dataset_size:
            raise ValueError("ElasticSampler.load_state_dict: the state is of a sampler with "
                             "another seed or data set size")
        processed = state_dict["processed_indices"]
        if state_dict["epoch"] != self._core.epoch:
            if len(processed):
                raise NotImplementedError(
                    "ElasticSampler.load_state_dict: loading another epoch's progress is not "
                    "supported; track the sampler in a State (commit/sync) to carry it")
            self.set_epoch(state_dict["epoch"])
            return
        if not self._is_current(processed):
            raise NotImplementedError(
                "ElasticSampler.load_state_dict: loading a different set of processed samples is "
                "not supported; track the sampler in a State (commit/sync) to carry progress")
        self._invalidate()

    def _is_current(self, processed):
        """Whether ``processed`` is this epoch's committed set (without listing it if it is this
        sampler's own, taken since the last change)."""
        if isinstance(processed, CommittedIndices) and processed.describes(self):
            return True
        if len(processed) != self._committed_key()[1]:
            return False
        return sorted(int(i) for i in processed) == self._committed_list()


class CommittedIndices(collections.abc.Sequence):
    """``state_dict()["processed_indices"]``: the samples of an epoch committed when the state dict
    was taken, ascending, listed on first use. Pickles and compares as the list it is."""

    def __init__(self, sampler, epoch, count):
        self._sampler = sampler
        self._key = (epoch, count)
        self._indices = [] if count == 0 else None

    def describes(self, sampler):
        """Whether these are ``sampler``'s committed samples as they are now."""
        return self._sampler is sampler and sampler._committed_key() == self._key

    def _list(self):
        if self._indices is None:
            if self._sampler._committed_key() != self._key:
                raise RuntimeError(
                    "ElasticSampler.state_dict()['processed_indices'] was read after the committed "
                    "set changed (a commit, sync or set_epoch since state_dict()); read it before, "
                    "or take state_dict() again")
            self._indices = self._sampler._committed_list()
        return self._indices

    def __len__(self):
        return self._key[1]

    def __getitem__(self, index):
        return self._list()[index]

    def __iter__(self):
        return iter(self._list())

    def __eq__(self, other):
        if isinstance(other, CommittedIndices):
            other = other._list()
        return list(self._list()) == list(other) if isinstance(other, (list, tuple)) else \
            NotImplemented

    def __reduce__(self):
        return (list, (list(self._list()),))

    def __repr__(self):
        return repr(self._list()) if self._indices is not None else \
            f"<{self._key[1]} committed samples of epoch {self._key[0]}, not listed yet>"
