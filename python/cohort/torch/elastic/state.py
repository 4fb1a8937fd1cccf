"""Elastic state for Python: values that survive a failure, on Cohort's C++ elastic::State.

``state.commit()`` snapshots every tracked value in memory (collective); ``state.restore()`` goes
back to the last commit (local); ``state.sync()`` makes every rank's values rank 0's (collective).
Python values are tracked through save/parse callbacks (``State::track_bytes``). A commit copies
the model's and the optimizer's tensors into snapshot buffers allocated once (snapshot.py: a
``copy_`` per tensor, the rest of the state dicts pickled) and pickles the other attributes (the
peers are the job's own ranks; see cohort.torch.functions); restore copies the tensors back in
place. A sync sends rank 0's state dicts as ``torch.save`` bytes, unless every rank restored the
commit it syncs to (a failure of some ranks, none joining): then each keeps its own model and
optimizer, which are the same on every rank. ElasticSamplers are tracked
natively, so that their processed samples merge at every commit.
"""

import io
import pickle
import weakref

import torch

from cohort import _C
from cohort.torch.elastic.sampler import ElasticSampler
from cohort.torch.elastic.snapshot import (TensorSnapshot, is_snapshot, restore_module,
                                           restore_optimizer)
from cohort.torch.zero import ZeroRedundancyOptimizer


def _torch_bytes(value):
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def _torch_value(data):
    return torch.load(io.BytesIO(data))


def _weakly(obj, method):
    """``obj.method`` as a callable that does not keep ``obj`` alive. The C++ State holds the
    callables and ``obj`` holds the C++ State: strong references back would make a cycle that
    Python's garbage collector cannot see (it does not look inside the C++ object), so no State,
    model or optimizer snapshot would ever be freed. The C++ State never outlives ``obj``."""
    ref = weakref.ref(obj)

    def call(*args):
        return getattr(ref(), method)(*args)

    return call


class ObjectState:
    """Named Python values (``**kwargs``) kept as attributes, committed, restored and synced.

    ``state.epoch = 3`` changes the value; the next commit keeps it. ElasticSampler values are
    tracked as samplers. Every rank creates the State with the same names in the same order.
    """

    def __init__(self, _label="python", **kwargs):
        object.__setattr__(self, "_cpp", _C.State(_label))
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_samplers", {})
        object.__setattr__(self, "_committing", False)
        self._track_fields()
        for key, value in kwargs.items():
            if isinstance(value, ElasticSampler):
                self._samplers[key] = value
                self._cpp.track_sampler(f"sampler.{key}", value._core)
            else:
                self._values[key] = value
        self._cpp.track_bytes("attributes", "python.pickle", _weakly(self, "_save_values"),
                              _weakly(self, "_parse_values"))

    def _track_fields(self):
        """Subclasses track their own values first (TorchState: model and optimizer)."""

    # --- attributes -----------------------------------------------------------------------------

    def __getattr__(self, name):
        values = self.__dict__.get("_values", {})
        if name in values:
            return values[name]
        samplers = self.__dict__.get("_samplers", {})
        if name in samplers:
            return samplers[name]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def __setattr__(self, name, value):
        if name in self._values:
            self._values[name] = value
        elif name in self._samplers:
            raise AttributeError(f"the tracked sampler {name!r} cannot be replaced")
        else:
            object.__setattr__(self, name, value)

    def _save_values(self):
        return pickle.dumps(self._values)

    def _parse_values(self, data):
        values = pickle.loads(data)
        if set(values) != set(self._values):
            raise ValueError(f"the saved attributes {sorted(values)} are not this State's "
                             f"{sorted(self._values)}")
        return lambda: self._values.update(values)

    # --- the State's operations -----------------------------------------------------------------

    def _repartitioned(self):
        for sampler in self._samplers.values():
            sampler._invalidate()

    def _settle(self):
        """After a successful restore or sync (TorchState: a sharded optimizer's new ranges)."""

    def _tensor_snapshots(self):
        """The snapshots a commit stages and then installs (TorchState: model and optimizer)."""
        return []

    def commit(self):
        """Collective: keeps every value as it is now (inside ``run``, also checks host updates)."""
        before = self._cpp.commit_count
        object.__setattr__(self, "_committing", True)
        try:
            self._cpp.commit()
        finally:
            object.__setattr__(self, "_committing", False)
            # The C++ commit counts a commit once every rank agreed, before its hook (the host
            # update check) may raise: the staged tensors are then part of the commit.
            committed = self._cpp.commit_count != before
            for snapshot in self._tensor_snapshots():
                if committed:
                    snapshot.install()
                else:
                    snapshot.discard()

    def restore(self):
        """Local: every value back to the last commit or sync; uncommitted sampler records dropped."""
        try:
            self._cpp.restore()
            self._settle()
        finally:
            self._repartitioned()

    def sync(self):
        """Collective: every rank takes rank 0's values; samplers repartitioned over the world."""
        try:
            self._cpp.sync()
            self._settle()
        finally:
            self._repartitioned()

    def check_host_updates(self):
        """Collective: raises HostsUpdatedInterrupt if the launcher changed the hosts."""
        _C.check_host_updates()

    def register_reset_callbacks(self, callbacks):
        """Functions to call after a reset into a new world (rank() and size() are the new ones)."""
        for callback in callbacks:
            self._cpp.add_reset_callback(callback)

    def on_reset(self):
        """Runs the reset callbacks in registration order (``run`` does it after every reset)."""
        self._cpp.run_reset_callbacks()

    @property
    def commit_count(self):
        """Successful commits so far."""
        return self._cpp.commit_count

    def last_reshard_bytes(self):
        """Bytes of sharded state (a ZeroRedundancyOptimizer's) this rank received from other ranks
        in its last sync: the ranges it took over after a change of world (0 when none moved)."""
        return self._cpp.last_reshard_bytes()

    def last_sync_kept(self):
        """Names of the values the last sync left as each rank held them instead of sending rank
        0's: a TorchState's ``model`` and replicated ``optimizer`` when every rank had restored the
        commit it synced to (some ranks failed, none joined). Empty when it sent everything."""
        return list(self._cpp.last_sync_kept())


class TorchState(ObjectState):
    """A model's parameters and buffers, an optimizer's state, and any other values.

    ``TorchState(model, optimizer, train_sampler=sampler, epoch=0, batch=0)`` as in Horovod: the
    model's ``state_dict()`` and the optimizer's (hyperparameters included) are committed,
    restored and synced with the other values. A commit copies their tensors into snapshot
    buffers (allocated at the first commit, and again only for tensors that appear or change
    shape, dtype or device); a restore copies them back into the live tensors.
    """

    def __init__(self, model=None, optimizer=None, **kwargs):
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "optimizer", optimizer)
        # With a ZeroRedundancyOptimizer the State's sharded replicas overlap the next step and a
        # sync may take the job back one commit: the model's snapshot keeps that commit too.
        zero = isinstance(optimizer, ZeroRedundancyOptimizer)
        object.__setattr__(self, "_model_snapshot", TensorSnapshot("model", keep_previous=zero))
        object.__setattr__(self, "_optimizer_snapshot", TensorSnapshot("optimizer"))
        super().__init__(_label="torch", **kwargs)

    def _track_fields(self):
        # The model and a replicated optimizer are the same on every rank of a data-parallel job
        # at the same commit: a sync after a failure of some ranks, where every rank restored
        # that commit, sends neither (each keeps its own). The ZeroRedundancyOptimizer's
        # replicated part is a few scalars, always sent.
        if self.model is not None:
            self._cpp.track_bytes("model", "torch.module.state_dict", _weakly(self, "_save_model"),
                                  _weakly(self, "_parse_model"), same_on_every_rank=True)
        if isinstance(self.optimizer, ZeroRedundancyOptimizer):
            # Hyperparameters and scalars whole on every rank; each per-element state tensor a
            # sharded value (zero.py).
            self._cpp.track_bytes("optimizer", "cohort.zero.replicated",
                                  _weakly(self, "_save_zero"), _weakly(self, "_parse_zero"))
            self.optimizer._track(self._cpp)
        elif self.optimizer is not None:
            self._cpp.track_bytes("optimizer", "torch.optim.state_dict",
                                  _weakly(self, "_save_optimizer"),
                                  _weakly(self, "_parse_optimizer"), same_on_every_rank=True)

    def _tensor_snapshots(self):
        return [snapshot for snapshot, tracked in ((self._model_snapshot, self.model),
                                                   (self._optimizer_snapshot, self.optimizer))
                if tracked is not None and not isinstance(tracked, ZeroRedundancyOptimizer)]

    def _settle(self):
        if isinstance(self.optimizer, ZeroRedundancyOptimizer):
            self.optimizer._settle()

    def _save_zero(self):
        return _torch_bytes(self.optimizer._save_replicated())

    def _parse_zero(self, data):
        return self.optimizer._parse_replicated(_torch_value(data))

    def snapshot_nbytes(self):
        """Bytes of tensor data the last commit keeps (the model's and the optimizer's)."""
        return sum(s.nbytes() for s in self._tensor_snapshots())

    # A commit stages a snapshot; a sync (rank 0) sends the state dict itself.
    def _save(self, snapshot, state_dict):
        return snapshot.stage(state_dict) if self._committing else _torch_bytes(state_dict)

    def _load(self, snapshot, data):
        return snapshot.load(data) if is_snapshot(data) else _torch_value(data)

    def _save_model(self):
        return self._save(self._model_snapshot, self.model.state_dict())

    def _save_optimizer(self):
        return self._save(self._optimizer_snapshot, self.optimizer.state_dict())

    def _parse_model(self, data):
        saved = self._load(self._model_snapshot, data)
        current = self.model.state_dict()
        if set(saved) != set(current):
            raise ValueError("the saved model has other parameters than this one")
        for key, tensor in saved.items():
            if tuple(tensor.shape) != tuple(current[key].shape):
                raise ValueError(f"the saved {key} has shape {tuple(tensor.shape)}, this model's "
                                 f"{tuple(current[key].shape)}")
        return lambda: restore_module(self.model, saved)

    def _parse_optimizer(self, data):
        snapshot = is_snapshot(data)
        saved = self._load(self._optimizer_snapshot, data)
        groups = self.optimizer.param_groups
        if len(saved["param_groups"]) != len(groups) or any(
                len(s["params"]) != len(g["params"])
                for s, g in zip(saved["param_groups"], groups)):
            raise ValueError("the saved optimizer state has other param groups than this one")
        if snapshot:  # its tensors are the snapshot buffers: copied out, never kept
            return lambda: restore_optimizer(self.optimizer, saved)
        return lambda: self.optimizer.load_state_dict(saved)
