"""Making every rank start from the same state: parameters, optimizer state and objects.

Objects travel as pickles (as in Horovod): unpickling runs code chosen by the sender, which is
acceptable here because the only peers are the job's own ranks, started by the same launcher from
the same program; never point these functions at data from outside the job.
"""

import pickle

import torch

from cohort import _C
from cohort.torch import mpi_ops
from cohort.torch.mpi_ops import global_process_set, synchronize

# Element types that go through a broadcast collective; others travel inside the pickle.
_COLLECTIVE_DTYPES = {torch.bool, torch.uint8, torch.int8, torch.int32, torch.int64,
                      torch.float16, torch.bfloat16, torch.float32, torch.float64}


def broadcast_parameters(params, root_rank, process_set=global_process_set):
    """Overwrites every tensor with root's, in place.

    ``params``: a ``state_dict()`` (a dict, taken in sorted name order) or a sequence of
    ``(name, tensor)`` pairs such as ``model.named_parameters()`` (in the given order, which must
    be the same on every rank).
    """
    if isinstance(params, dict):
        items = sorted(params.items())
    else:
        items = [p if isinstance(p, tuple) else (None, p) for p in params]
    handles = []
    # The runtime writes the parameters' memory; autograd must not see it as an in-place op.
    with torch.no_grad():
        for index, (name, tensor) in enumerate(items):
            if tensor is None:
                continue
            label = f"parameters.{name if name is not None else index}"
            handles.append(mpi_ops.broadcast_async_(tensor, root_rank, name=label,
                                                    process_set=process_set))
        for handle in handles:
            synchronize(handle)


def _map_leaves(value, leaf):
    """``value`` rebuilt with ``leaf`` applied to everything not a dict, list or tuple."""
    if isinstance(value, dict):
        return {k: _map_leaves(v, leaf) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_leaves(v, leaf) for v in value]
    if isinstance(value, tuple):
        return tuple(_map_leaves(v, leaf) for v in value)
    return leaf(value)


def _split_tensors(value, tensors):
    """``value`` with every collective-friendly tensor replaced by a placeholder (its index)."""
    def take(leaf):
        if isinstance(leaf, torch.Tensor) and leaf.dtype in _COLLECTIVE_DTYPES \
                and leaf.device.type == "cpu":
            tensors.append(leaf)
            return _TensorSlot(len(tensors) - 1, tuple(leaf.shape), leaf.dtype)
        return leaf
    return _map_leaves(value, take)


def _fill_tensors(value, tensors):
    """The inverse of ``_split_tensors``: placeholders replaced by ``tensors``."""
    return _map_leaves(value, lambda leaf: tensors[leaf.index]
                       if isinstance(leaf, _TensorSlot) else leaf)


class _TensorSlot:
    """Where a broadcast tensor goes back into the optimizer's state dict."""

    def __init__(self, index, shape, dtype):
        self.index = index
        self.shape = shape
        self.dtype = dtype


def broadcast_optimizer_state(optimizer, root_rank, model=None, process_set=global_process_set):
    """Makes the optimizer's whole state equal to root's.

    Every param group's hyperparameters (lr, momentum, betas, eps, weight decay, ...) and every
    per-parameter state tensor (momentum buffers, Adam's step and moments). A rank with no state
    yet (a fresh optimizer) gets root's. Root sends its state dict's structure as one pickled
    object, then each state tensor through a broadcast collective; the others load the result
    with ``optimizer.load_state_dict``, which checks that the param groups match.

    As Horovod, a rank whose optimizer has no state yet gives each parameter that requires grad
    and has none a zero gradient (sparse for ``SparseAdam``, and for ``SGD`` on a sparse
    ``Embedding`` of ``model``). Horovod then takes an optimizer step to create the state; Cohort
    takes root's state instead, so parameters are not moved (Horovod's step moves them under
    weight decay).
    """
    if not optimizer.state_dict()["state"]:
        _zero_gradients(optimizer, model)
    is_root = _C.rank() == root_rank
    tensors = []
    skeleton = _split_tensors(optimizer.state_dict(), tensors) if is_root else None
    skeleton = broadcast_object(skeleton, root_rank, name="optimizer_state.structure",
                                process_set=process_set)
    if not is_root:
        slots = []
        _collect_slots(skeleton, slots)
        # Root split off its CPU tensors only (_split_tensors): these are CPU tensors too, whatever
        # torch's default device is (torch.set_default_device('cuda') would make them CUDA ones).
        tensors = [torch.empty(s.shape, dtype=s.dtype, device="cpu")
                   for s in sorted(slots, key=lambda s: s.index)]
    handles = [mpi_ops.broadcast_async_(t, root_rank, name=f"optimizer_state.{i}",
                                        process_set=process_set)
               for i, t in enumerate(tensors)]
    for handle in handles:
        synchronize(handle)
    if not is_root:
        optimizer.load_state_dict(_fill_tensors(skeleton, tensors))


def _zero_gradients(optimizer, model):
    """Horovod's zero gradients of a fresh optimizer's parameters (see broadcast_optimizer_state)."""
    sparse = set()
    if model is not None:
        sparse = {id(p) for m in model.modules()
                  if isinstance(m, torch.nn.Embedding) and m.sparse for p in m.parameters()}
    for group in optimizer.param_groups:
        for p in group["params"]:
            if not p.requires_grad or p.grad is not None:
                continue
            p.grad = torch.zeros_like(p)
            if isinstance(optimizer, torch.optim.SparseAdam) or (
                    isinstance(optimizer, torch.optim.SGD) and id(p) in sparse):
                p.grad = p.grad.to_sparse()


def _collect_slots(value, slots):
    if isinstance(value, _TensorSlot):
        slots.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _collect_slots(v, slots)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _collect_slots(v, slots)


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """Root's object on every rank (root gets its own object back). Pickled; see the module doc."""
    data = pickle.dumps(obj) if _C.rank() == root_rank else b""
    data = _C.broadcast_bytes(data, root_rank, mpi_ops._set_id(process_set),
                              name or "broadcast_object")
    return obj if _C.rank() == root_rank else pickle.loads(data)


def allgather_object(obj, name=None, process_set=global_process_set):
    """Every rank's object, in rank order. Pickled; see the module doc."""
    gathered = _C.allgather_bytes(pickle.dumps(obj), mpi_ops._set_id(process_set),
                                  name or "allgather_object")
    return [pickle.loads(data) for data in gathered]
