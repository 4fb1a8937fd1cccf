"""ZeroRedundancyOptimizer: torch's name and semantics, the optimizer state split over the ranks.

Each param group's parameters are laid end to end as one flat vector of ``n`` elements; rank ``r``
owns elements ``shard_range(n, r, size)`` (contiguous, in rank order, the first ``n % size`` ranks
one longer), the rule Cohort's sharded state and ``reducescatter`` use. ``step()``:

1. reduces the gradients (a ``grouped_reducescatter`` with ``Average`` of each group's flat
   gradient: each rank receives only its own range, already averaged; a missing gradient counts as
   zeros, as DistributedOptimizer does), or with ``reduce_gradients=False`` takes the gradients as
   they are (averaged already, as under DDP in torch) and keeps its range of them;
2. steps the wrapped optimizer (``self.optim``) over one flat parameter per group, this rank's
   range, so its state (Adam's moments, SGD's momentum) exists for that range only;
3. allgathers the updated ranges so that every rank's parameters are whole again.

The optimizer's per-element state is 1/size of the unsharded state per rank. The gradients are
still whole on every rank during backward (autograd fills ``p.grad``), so this is ZeRO stage 1 in
memory, with the traffic of stage 2 (a reduce-scatter and an allgather, the bytes of one
allreduce). Under ``hvd.elastic.TorchState`` every per-element state tensor is a sharded value of
the State (docs/state.md, "Sharded values"): committed with a replica on another host, and
resharded into a new world by sync. See docs/pytorch.md, "ZeroRedundancyOptimizer".
"""

import copy
import weakref

import torch

from cohort import _C
from cohort.torch.basics import rank, size
from cohort.torch.grouped_ops import grouped_allgather, grouped_reducescatter
from cohort.torch.mpi_ops import Average


def _weak_method(obj, name, *bound):
    """``obj.name(*bound, ...)`` as a callable that does not keep ``obj`` alive: the State that
    holds the callable must not hold the optimizer in a cycle the garbage collector cannot see."""
    ref = weakref.ref(obj)

    def call(*args):
        return getattr(ref(), name)(*bound, *args)

    return call


def _element_keys(optimizer_class, hyperparameters, defaults, like):
    """The state keys ``optimizer_class`` keeps per element (a tensor the shape of the parameter),
    found by one step of a throwaway optimizer on a two-element parameter like ``like``."""
    probe = torch.zeros(2, dtype=like.dtype, device=like.device, requires_grad=True)
    optimizer = optimizer_class([dict(hyperparameters, params=[probe])], **defaults)
    probe.grad = torch.ones_like(probe)
    optimizer.step()
    return sorted(key for key, value in optimizer.state[probe].items()
                  if torch.is_tensor(value) and value.shape == probe.shape)


def _pieces(params, begin, end):
    """(param, first, last, at): elements [first, last) of ``param`` flattened are elements
    [at, at + last - first) of the range [begin, end) of the group's flat vector."""
    offset = 0
    for param in params:
        n = param.numel()
        first, last = max(begin, offset), min(end, offset + n)
        if first < last:
            yield param, first - offset, last - offset, first - begin
        offset += n


class _GroupShard:
    """One param group: its parameters, this rank's range of their flat vector, the flat
    parameter the wrapped optimizer steps, and the per-element state tensors of that range."""

    def __init__(self, params, keys):
        self.params = params
        self.length = sum(p.numel() for p in params)
        self.keys = keys
        self.begin, self.end = _C.shard_range(self.length, rank(), size())
        self.param = torch.nn.Parameter(self.read_params())
        self.tensors = {key: torch.zeros_like(self.param.detach()) for key in keys}
        self.storages = []  # the State's handles on self.tensors, once tracked

    def read_params(self):
        like = self.params[0]
        out = torch.empty(self.end - self.begin, dtype=like.dtype, device=like.device)
        for param, first, last, at in _pieces(self.params, self.begin, self.end):
            out[at:at + last - first].copy_(param.detach().reshape(-1)[first:last])
        return out

    def flat_grad(self):
        grads = []
        for p in self.params:
            if p.grad is not None and p.grad.is_sparse:
                raise ValueError("ZeroRedundancyOptimizer: sparse gradients cannot be sharded")
            grads.append((p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1))
        return torch.cat(grads)

    def local_grad(self):
        return self.flat_grad()[self.begin:self.end]

    def write_params(self, flat):
        offset = 0
        with torch.no_grad():
            for p in self.params:
                n = p.numel()
                p.copy_(flat[offset:offset + n].view_as(p))
                offset += n

    def adopt(self, state):
        """Makes self.tensors the wrapped optimizer's own state tensors after its step."""
        for key in self.keys:
            tensor = state.get(key)
            if tensor is None or tensor.shape != self.param.shape:
                raise RuntimeError(f"ZeroRedundancyOptimizer: the wrapped optimizer's state "
                                   f"'{key}' is missing or has another shape after its step")
            if not tensor.is_contiguous():
                tensor = state[key] = tensor.contiguous()
            self.tensors[key] = tensor


class ZeroRedundancyOptimizer(torch.optim.Optimizer):
    """``ZeroRedundancyOptimizer(params, optimizer_class, **defaults)`` as in
    ``torch.distributed.optim``; the group is the whole job (``process_group`` must be None).

    ``reduce_gradients`` (Cohort's): True averages the gradients over the ranks in ``step()``;
    False takes them as already averaged.
    """

    def __init__(self, params, optimizer_class, process_group=None,
                 parameters_as_bucket_view=False, overlap_with_ddp=False, reduce_gradients=True,
                 **defaults):
        if process_group is not None:
            raise ValueError("ZeroRedundancyOptimizer: process_group must be None: the optimizer "
                             "state is sharded over the whole job")
        if overlap_with_ddp:
            raise ValueError("ZeroRedundancyOptimizer: overlap_with_ddp needs torch's DDP, which "
                             "Cohort does not use; the reduction happens in step()")
        self._ready = False
        super().__init__(params, defaults)
        self._reduce_gradients = reduce_gradients
        self.parameters_as_bucket_view = parameters_as_bucket_view  # accepted; no effect here
        self._shards = []
        local_groups = []
        for group in self.param_groups:
            params = [p for p in group["params"]]
            self._check_group(params)
            given = {k: v for k, v in group.items() if k != "params"}
            keys = _element_keys(optimizer_class, given, {}, params[0])
            shard = _GroupShard(params, keys)
            self._shards.append(shard)
            local_groups.append(dict(given, params=[shard.param]))
        self.optim = optimizer_class(local_groups, **defaults)
        for group, local in zip(self.param_groups, self.optim.param_groups):
            group.update({k: v for k, v in local.items() if k != "params"})
        self._consolidated = None
        self._replicated = None  # the replicated part of a commit, until _settle installs it
        self._ready = True

    @staticmethod
    def _check_group(params):
        if not params:
            raise ValueError("ZeroRedundancyOptimizer: a param group has no parameters")
        if len({(p.dtype, p.device) for p in params}) != 1:
            raise ValueError("ZeroRedundancyOptimizer: the parameters of a group must share one "
                             "dtype and one device (they are sharded as one flat vector)")

    def add_param_group(self, param_group):
        if getattr(self, "_ready", False):
            raise ValueError("ZeroRedundancyOptimizer: add_param_group after construction is not "
                             "supported: create the optimizer with every group")
        super().add_param_group(param_group)

    # --- stepping -----------------------------------------------------------------------------

    def _hyperparameters_to_local(self):
        for group, local in zip(self.param_groups, self.optim.param_groups):
            local.update({k: v for k, v in group.items() if k != "params"})

    @torch.no_grad()
    def step(self, closure=None):
        """Reduces the gradients, steps this rank's range, allgathers the parameters."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self._hyperparameters_to_local()
        if self._reduce_gradients:
            grads = grouped_reducescatter([s.flat_grad() for s in self._shards], op=Average,
                                          name="ZeroRedundancyOptimizer.grads")
        else:
            grads = [s.local_grad() for s in self._shards]
        for shard, grad in zip(self._shards, grads):
            shard.param.grad = grad.reshape(shard.param.shape)
        self.optim.step()
        for shard in self._shards:
            shard.param.grad = None
            shard.adopt(self.optim.state[shard.param])
        whole = grouped_allgather([s.param.detach() for s in self._shards],
                                  name="ZeroRedundancyOptimizer.params")
        for shard, flat in zip(self._shards, whole):
            shard.write_params(flat)
        return loss

    # --- torch's state dicts --------------------------------------------------------------------

    def consolidate_state_dict(self, to=0):
        """Collective: the whole state, in the wrapped optimizer's format over the original
        parameters, reaches rank ``to`` (kept there for ``state_dict()``)."""
        if not 0 <= to < size():
            raise ValueError(f"ZeroRedundancyOptimizer.consolidate_state_dict: rank {to} is not "
                             f"in this world of {size()}")
        parts = [s.tensors[k] for s in self._shards for k in s.keys]
        gathered = iter(grouped_allgather(parts, name="ZeroRedundancyOptimizer.consolidate")
                        if parts else [])
        whole = [{k: next(gathered) for k in s.keys} for s in self._shards]
        if rank() != to:
            self._consolidated = None
            return
        state, groups, index = {}, [], 0
        for group, shard, flats in zip(self.param_groups, self._shards, whole):
            local = self.optim.state.get(shard.param)
            ids = list(range(index, index + len(shard.params)))
            index += len(shard.params)
            groups.append(dict({k: v for k, v in group.items() if k != "params"}, params=ids))
            if not local:
                continue
            scalars = {k: v for k, v in local.items() if k not in shard.keys}
            offset = 0
            for i, p in zip(ids, shard.params):
                n = p.numel()
                entry = copy.deepcopy(scalars)
                entry.update({k: flats[k][offset:offset + n].view_as(p).clone() for k in flats})
                state[i] = entry
                offset += n
        self._consolidated = {"state": state, "param_groups": groups}

    def state_dict(self):
        """The state consolidated on this rank by the last ``consolidate_state_dict(to=rank)``."""
        if self._consolidated is None:
            raise RuntimeError(f"ZeroRedundancyOptimizer.state_dict: rank {rank()} holds no "
                               "consolidated state: call consolidate_state_dict(to) on every rank "
                               "first, then state_dict() on rank `to`")
        return self._consolidated

    def load_state_dict(self, state_dict):
        """Loads a whole state (``state_dict()``'s format, e.g. from a plain optimizer of the same
        class over the same parameters): each rank keeps its range. Local; changes nothing on a
        ValueError."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups) or any(
                len(g["params"]) != len(s.params) for g, s in zip(groups, self._shards)):
            raise ValueError("ZeroRedundancyOptimizer.load_state_dict: the saved state has other "
                             "param groups than this optimizer")
        installs = [self._loaded_group(shard, saved, state_dict["state"])
                    for shard, saved in zip(self._shards, groups)]
        for group, shard, saved, install in zip(self.param_groups, self._shards, groups, installs):
            group.update({k: v for k, v in saved.items() if k != "params"})
            install()
        self._hyperparameters_to_local()

    def _loaded_group(self, shard, saved, states):
        entries = [states.get(i, states.get(str(i))) for i in saved["params"]]
        if all(e is None for e in entries):
            return lambda: self.optim.state.pop(shard.param, None)
        if any(e is None for e in entries) or any(set(shard.keys) - set(e) for e in entries):
            raise ValueError("ZeroRedundancyOptimizer.load_state_dict: every parameter of a group "
                             f"needs the state {shard.keys}")
        tensors = {}
        for key in shard.keys:
            flat = torch.cat([e[key].reshape(-1) for e in entries])
            if flat.numel() != shard.length:
                raise ValueError(f"ZeroRedundancyOptimizer.load_state_dict: the saved '{key}' has "
                                 f"{flat.numel()} elements, the group {shard.length}")
            tensors[key] = flat[shard.begin:shard.end].to(shard.param.dtype).clone()
        scalars = {k: copy.deepcopy(v) for k, v in entries[0].items() if k not in shard.keys}

        def install():
            shard.tensors.update(tensors)
            self.optim.state[shard.param] = dict(scalars, **shard.tensors)

        return install

    # --- elastic (cohort.torch.elastic.TorchState) ---------------------------------------------

    def _track(self, cpp_state):
        """Tracks every per-element state tensor as a sharded value of ``cpp_state``."""
        for g, shard in enumerate(self._shards):
            if shard.keys and shard.param.device.type != "cpu":
                raise ValueError("TorchState: the sharded state of a ZeroRedundancyOptimizer over "
                                 f"{shard.param.device.type} parameters cannot be committed yet: "
                                 "only CPU tensors")
            for key in shard.keys:
                storage = _C.ShardStorage(str(shard.param.dtype).replace("torch.", ""),
                                          shard.length, _weak_method(self, "_view", g, key),
                                          _weak_method(self, "_assign", g, key))
                _C.track_sharded(cpp_state, f"optimizer.group{g}.{key}", storage)
                shard.storages.append(storage)

    def _view(self, g, key):
        tensor = self._shards[g].tensors[key]
        return tensor.data_ptr(), tensor.numel() * tensor.element_size()

    def _assign(self, g, key, begin, end):
        like = self._shards[g].param
        self._shards[g].tensors[key] = torch.zeros(end - begin, dtype=like.dtype)

    def _save_replicated(self):
        """What a commit keeps whole on every rank: hyperparameters, the scalar state (Adam's
        step) and which groups have stepped. Between a restore and _settle, what the restore
        brought back (a sync's root sends what it restored, not its live state)."""
        if self._replicated is not None:
            return self._replicated
        groups = [{k: v for k, v in g.items() if k != "params"} for g in self.param_groups]
        scalars = []
        for shard in self._shards:
            local = self.optim.state.get(shard.param)
            scalars.append(None if not local else
                           {k: v for k, v in local.items() if k not in shard.keys})
        return {"param_groups": groups, "scalars": scalars, "keys": [s.keys for s in self._shards],
                "lengths": [s.length for s in self._shards]}

    def _parse_replicated(self, saved):
        if (saved.get("keys") != [s.keys for s in self._shards]
                or saved.get("lengths") != [s.length for s in self._shards]):
            raise ValueError("the saved ZeroRedundancyOptimizer state has other groups, lengths "
                             "or state keys than this one")
        return lambda: setattr(self, "_replicated", saved)

    def _settle(self):
        """After a restore or sync: this rank's range in the (new) world, the flat parameters read
        from the restored model, and the restored state installed in the wrapped optimizer."""
        saved, self._replicated = self._replicated, None
        for g, shard in enumerate(self._shards):
            begin, end = _C.shard_range(shard.length, rank(), size())
            if (begin, end) != (shard.begin, shard.end):
                old = shard.param
                shard.begin, shard.end = begin, end
                shard.param = torch.nn.Parameter(shard.read_params())
                self.optim.param_groups[g]["params"] = [shard.param]
                self.optim.state.pop(old, None)
            else:
                shard.param.data.copy_(shard.read_params())
            if saved is None:
                continue
            self.param_groups[g].update(saved["param_groups"][g])
            scalars = saved["scalars"][g]
            if scalars is None:
                self.optim.state.pop(shard.param, None)
            else:
                self.optim.state[shard.param] = dict(copy.deepcopy(scalars), **shard.tensors)
        self._hyperparameters_to_local()
        self._consolidated = None
