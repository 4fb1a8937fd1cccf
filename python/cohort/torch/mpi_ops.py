"""Horovod's basic operations on torch tensors, over Cohort's runtime.

Every collective has Horovod's signature. The ``*_async`` forms return an opaque handle for
``poll(handle)`` and ``synchronize(handle)`` (which returns the output); the forms ending in ``_``
work in place. A given ``name`` is the collective's name as it is, whatever the operation (Horovod
makes it ``<op>.<name>``), so ranks that submit different operations under one name fail with
``MismatchError``; unnamed calls are numbered per kind, so they must come in the same order on
every rank, as in Horovod.
"""

import torch

from cohort import _C
from cohort.torch import tensor_ops as _ops
from cohort._errors import InvalidArgument  # noqa: F401  (as before the move)
from cohort.torch.basics import (  # noqa: F401  (re-exported)
    _GlobalProcessSet,
    _set_id,
    add_process_set,
    ccl_built,
    cross_rank,
    cross_size,
    cuda_built,
    ddl_built,
    global_process_set,
    gloo_built,
    gloo_enabled,
    init,
    is_initialized,
    local_rank,
    local_size,
    mpi_built,
    mpi_enabled,
    nccl_built,
    ProcessSet,
    rank,
    remove_process_set,
    rocm_built,
    shutdown,
    size,
)
from cohort.torch import autograd_ops as _ag
from cohort.torch.compression import Compression
# Horovod's mpi_ops has the grouped allgather and reducescatter too.
from cohort.torch.grouped_ops import (  # noqa: F401  (re-exported)
    grouped_allgather,
    grouped_allgather_async,
    grouped_reducescatter,
    grouped_reducescatter_async,
)
from cohort.torch.op_common import (  # noqa: F401  (re-exported)
    Adasum,
    Average,
    Handle,
    Max,
    Min,
    Product,
    Sum,
    _check_all,
    _check_device,
    _check_op,
    _Finished,
    _GroupWork,
    _name,
    _output,
    _outputs,
    _resolve_op,
    _UnsupportedOp,
    poll,
    synchronize,
)


def _reduce_args(kind, average, op, prescale_factor, postscale_factor, process_set, name):
    """The checked arguments a reduction passes after its tensor(s): op, scales, set id, name."""
    return (_resolve_op(average, op), prescale_factor, postscale_factor, _set_id(process_set),
            _name(kind, name))


# --- Allreduce -----------------------------------------------------------------------------------

def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    """Starts an allreduce into a new tensor; ``synchronize`` returns it."""
    _check_device(tensor, "allreduce_async")
    args = _reduce_args("allreduce", average, op, prescale_factor, postscale_factor, process_set,
                        name)
    return Handle(_ops.allreduce_async(tensor, *args), _output)


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """Reduces ``tensor`` over the ranks into a new tensor (Average by default); differentiable."""
    _check_device(tensor, "allreduce")
    args = _reduce_args("allreduce", average, op, prescale_factor, postscale_factor, process_set,
                        name)
    compressed, ctx = compression.compress(tensor)
    if compressed.requires_grad:
        out = _ag.AllreduceFunction.apply(compressed, *args)
    else:
        out = _ops.allreduce(compressed, *args)
    return compression.decompress(out, ctx)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set):
    """Starts an in-place allreduce; ``synchronize`` returns ``tensor``."""
    _check_device(tensor, "allreduce_async_")
    args = _reduce_args("allreduce", average, op, prescale_factor, postscale_factor, process_set,
                        name)
    return Handle(_ops.allreduce_async_(tensor, *args), _output)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    """Reduces ``tensor`` in place and returns it."""
    _check_device(tensor, "allreduce_")
    args = _reduce_args("allreduce", average, op, prescale_factor, postscale_factor, process_set,
                        name)
    return _ops.allreduce_(tensor, *args)


# --- Grouped allreduce ---------------------------------------------------------------------------

def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    """Starts one allreduce of every tensor (negotiated and fused as one); outputs are new."""
    tensors = _check_all(tensors, "grouped_allreduce_async")
    args = _reduce_args("grouped_allreduce", average, op, prescale_factor, postscale_factor,
                        process_set, name)
    return Handle(_ops.grouped_allreduce_async(tensors, *args), _outputs)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """One allreduce of every tensor; returns the list of results."""
    tensors = _check_all(tensors, "grouped_allreduce")
    args = _reduce_args("grouped_allreduce", average, op, prescale_factor, postscale_factor,
                        process_set, name)
    compressed = [compression.compress(t) for t in tensors]
    inputs = [c for c, _ in compressed]
    if any(t.requires_grad for t in inputs):
        outs = _ag.GroupedAllreduceFunction.apply(*args, *inputs)
    else:
        outs = _ops.grouped_allreduce(inputs, *args)
    return [compression.decompress(o, ctx) for o, (_, ctx) in zip(outs, compressed)]


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    """Starts one in-place allreduce of every tensor."""
    tensors = _check_all(tensors, "grouped_allreduce_async_")
    args = _reduce_args("grouped_allreduce", average, op, prescale_factor, postscale_factor,
                        process_set, name)
    return Handle(_ops.grouped_allreduce_async_(tensors, *args), _outputs)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    """Reduces every tensor in place, as one collective; returns them."""
    tensors = _check_all(tensors, "grouped_allreduce_")
    args = _reduce_args("grouped_allreduce", average, op, prescale_factor, postscale_factor,
                        process_set, name)
    return _ops.grouped_allreduce_(tensors, *args)


# --- Allgather, broadcast, alltoall, reducescatter -----------------------------------------------

def allgather_async(tensor, name=None, process_set=global_process_set):
    """Starts an allgather (concatenation along the first dimension, in rank order)."""
    _check_device(tensor, "allgather_async")
    work = _ops.allgather_async(tensor, _set_id(process_set), _name("allgather", name))
    return Handle(work, _output)


def allgather(tensor, name=None, process_set=global_process_set):
    """Every rank's tensor, concatenated along the first dimension in rank order; differentiable
    (the gradient is this rank's rows of the output gradient averaged over the ranks)."""
    _check_device(tensor, "allgather")
    set_id = _set_id(process_set)
    if tensor.requires_grad:
        return _ag.AllgatherFunction.apply(tensor, set_id, _name("allgather", name))
    return _ops.allgather(tensor, set_id, _name("allgather", name))


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts a broadcast of root's tensor into a new tensor."""
    _check_device(tensor, "broadcast_async")
    work = _ops.broadcast_async(tensor, root_rank, _set_id(process_set), _name("broadcast", name))
    return Handle(work, _output)


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """Root's tensor, as a new tensor on every rank; differentiable (root's gradient is the output
    gradient averaged over the ranks, the others' zero)."""
    _check_device(tensor, "broadcast")
    set_id = _set_id(process_set)
    if tensor.requires_grad:
        return _ag.BroadcastFunction.apply(tensor, root_rank, set_id, _name("broadcast", name))
    return _ops.broadcast(tensor, root_rank, set_id, _name("broadcast", name))


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts an in-place broadcast of root's tensor."""
    _check_device(tensor, "broadcast_async_")
    work = _ops.broadcast_async_(tensor, root_rank, _set_id(process_set), _name("broadcast", name))
    return Handle(work, _output)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    """Overwrites ``tensor`` with root's and returns it."""
    _check_device(tensor, "broadcast_")
    return _ops.broadcast_(tensor, root_rank, _set_id(process_set), _name("broadcast", name))


def _splits_tensor(splits):
    if splits is None:
        return None
    if isinstance(splits, torch.Tensor):
        return splits
    return torch.tensor(list(splits), dtype=torch.int64, device="cpu")


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    """Starts an alltoall; ``synchronize`` returns ``(output, received_splits)``."""
    _check_device(tensor, "alltoall_async")
    splits_t = _splits_tensor(splits)
    # Horovod's received splits have the dtype of the splits given, or int32.
    rdtype = splits.dtype if isinstance(splits, torch.Tensor) else torch.int32
    work = _ops.alltoall_async(tensor, splits_t, _set_id(process_set), _name("alltoall", name))
    return Handle(work, lambda w: (w.wait(), w.received_splits().to(rdtype)))


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Sends ``splits[j]`` rows to rank j (even split if None).

    As Horovod: returns the rows received, and, when ``splits`` is given, also how many came from
    each rank: ``(output, received_splits)``.
    """
    if not tensor.requires_grad:
        output, received = synchronize(alltoall_async(tensor, splits, name, process_set))
        return output if splits is None else (output, received)
    _check_device(tensor, "alltoall")
    rdtype = splits.dtype if isinstance(splits, torch.Tensor) else torch.int32
    output, received = _ag.AlltoallFunction.apply(tensor, _splits_tensor(splits),
                                                  _set_id(process_set), _name("alltoall", name))
    return output if splits is None else (output, received.to(rdtype))


def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set,
                        prescale_factor=1.0, postscale_factor=1.0):
    """Starts a reducescatter; ``synchronize`` returns this rank's block."""
    _check_device(tensor, "reducescatter_async")
    op = _check_op(op)
    work = _ops.reducescatter_async(tensor, op, prescale_factor, postscale_factor,
                                  _set_id(process_set), _name("reducescatter", name))
    return Handle(work, _output)


def reducescatter(tensor, name=None, compression=Compression.none, op=Average,
                  process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """Reduces ``tensor`` and returns this rank's block of the first dimension.

    With d rows over n ranks, rank r gets d // n rows, plus one if r < d % n.
    """
    _check_device(tensor, "reducescatter")
    op = _check_op(op)
    compressed, ctx = compression.compress(tensor)
    args = (op, prescale_factor, postscale_factor, _set_id(process_set),
            _name("reducescatter", name))
    if compressed.requires_grad:
        out = _ag.ReducescatterFunction.apply(compressed, *args)
    else:
        out = _ops.reducescatter(compressed, *args)
    return compression.decompress(out, ctx)


def sparse_allreduce_async(tensor, name, op, process_set=global_process_set):
    """Starts the allreduce of a sparse COO tensor as Horovod does: an allgather of its indices
    and one of its values (duplicates are summed when the result is coalesced; Average divides the
    values by the set's size). ``synchronize(handle)``, or ``handle()`` as in Horovod, returns the
    sparse result."""
    _check_device(tensor, "sparse_allreduce_async")
    if not tensor.is_sparse:
        raise _C.InvalidArgument("cohort.torch.sparse_allreduce_async: expected a sparse COO "
                                 f"tensor, got layout {tensor.layout}")
    op = _check_op(op)
    if op not in (Average, _C.ReduceOp.SUM):
        raise _C.InvalidArgument("cohort.torch.sparse_allreduce_async: op must be Sum or Average")
    base = "sparse_allreduce" if name is None else name
    indices = allgather_async(tensor._indices().t().contiguous(), f"{base}.indices", process_set)
    values = allgather_async(tensor._values().contiguous(), f"{base}.values", process_set)
    size = len(_C.process_set_ranks(_set_id(process_set)))

    def finish(group):
        all_values, all_indices = synchronize(values), synchronize(indices)
        if op == Average:
            all_values = all_values / size
        return torch.sparse_coo_tensor(all_indices.t(), all_values, tensor.size())

    return Handle(_GroupWork(f"sparse_allreduce.{base}", [indices._work, values._work]), finish)


# --- Barrier and join ----------------------------------------------------------------------------

def barrier(process_set=global_process_set):
    """Returns once every rank of the set has reached the barrier."""
    _C.barrier("cohort.torch.barrier", _set_id(process_set))


def join(device=-1):
    """This rank ran out of data: blocks until every rank has joined; returns the last joiner.

    Meanwhile the other ranks' allreduces go on with this rank contributing zeros.
    """
    del device  # CPU collectives only need the rank
    return _C.join()

