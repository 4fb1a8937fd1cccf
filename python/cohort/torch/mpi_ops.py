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
from cohort._errors import InvalidArgument
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

# The reduction operators. Adasum is named so that scripts that mention it import, and refused
# precisely when used.
Sum = _C.ReduceOp.SUM
Average = _C.ReduceOp.AVERAGE
Min = _C.ReduceOp.MIN
Max = _C.ReduceOp.MAX
Product = _C.ReduceOp.PRODUCT


class _UnsupportedOp:
    """A Horovod reduction operator that Cohort does not implement."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


Adasum = _UnsupportedOp("Adasum")


def _check_op(op):
    if isinstance(op, _UnsupportedOp):
        raise NotImplementedError(
            f"cohort.torch: op={op.name} is not supported by Cohort "
            "(supported: Sum, Average, Min, Max, Product)")
    if not isinstance(op, _C.ReduceOp):
        raise InvalidArgument(f"cohort.torch: op must be one of Sum, Average, Min, Max, Product, "
                              f"not {op!r}")
    return op


def _resolve_op(average, op, default=Average):
    """Horovod's rules: ``average`` is the deprecated form of ``op`` and may not come with it."""
    if average is not None:
        if op is not None:
            raise ValueError("The op parameter supersedes average. Please provide only one of them.")
        return Average if average else Sum
    return _check_op(default if op is None else op)


# --- Handles -------------------------------------------------------------------------------------

class Handle:
    """An asynchronous collective in flight: pass it to ``poll`` or ``synchronize``."""

    __slots__ = ("_work", "_finish", "_result", "_done")

    def __init__(self, work, finish):
        self._work = work
        self._finish = finish
        self._done = False
        self._result = None

    def __repr__(self):
        return f"<cohort.torch handle {self._work.name}>"

    def __call__(self):
        """``synchronize(handle)``: Horovod's sparse allreduce handle is called this way."""
        return synchronize(self)


def poll(handle):
    """True once the collective has completed (or failed); never blocks."""
    return handle._done or handle._work.poll()


def synchronize(handle):
    """Waits for the collective and returns its output (raises its error)."""
    if not handle._done:
        handle._result = handle._finish(handle._work)
        handle._done = True
        handle._work = _Finished(handle._work.name)
    return handle._result


class _Finished:
    """What a handle keeps once synchronized: its name, and a poll that says done."""

    def __init__(self, name):
        self.name = name

    def poll(self):
        return True


def _check_device(tensor, what):
    if not isinstance(tensor, torch.Tensor):
        raise InvalidArgument(f"cohort.torch.{what}: expected a torch.Tensor, got "
                              f"{type(tensor).__name__}")
    if tensor.device.type not in ("cpu", "cuda"):
        raise InvalidArgument(f"cohort.torch.{what}: tensor on device '{tensor.device}'; only CPU "
                              f"tensors (and CUDA ones in NCCL builds) are supported")


def _name(op, name):
    # The user's name as it is (None: the runtime numbers it, "<op>.noname.<n>"): one name is one
    # collective in flight whatever its operation, so ranks that submit different operations under
    # it fail with MismatchError rather than wait for each other (Horovod prefixes the operation,
    # docs/horovod-compatibility.md#one-name-one-collective).
    return "" if name is None else name


def _reduce_args(kind, average, op, prescale_factor, postscale_factor, process_set, name):
    """The checked arguments a reduction passes after its tensor(s): op, scales, set id, name."""
    return (_resolve_op(average, op), prescale_factor, postscale_factor, _set_id(process_set),
            _name(kind, name))


def _output(work):
    """A single-tensor handle's result: the output tensor."""
    return work.wait()


def _outputs(work):
    """A grouped handle's result: the list of output tensors."""
    return work.wait_all()


# --- Allreduce -----------------------------------------------------------------------------------

def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    """Starts an allreduce into a new tensor; ``synchronize`` returns it."""
    _check_device(tensor, "allreduce_async")
    args = _reduce_args("allreduce", average, op, prescale_factor, postscale_factor, process_set,
                        name)
    return Handle(_C.allreduce_async(tensor, *args), _output)


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
        out = _C.allreduce(compressed, *args)
    return compression.decompress(out, ctx)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set):
    """Starts an in-place allreduce; ``synchronize`` returns ``tensor``."""
    _check_device(tensor, "allreduce_async_")
    args = _reduce_args("allreduce", average, op, prescale_factor, postscale_factor, process_set,
                        name)
    return Handle(_C.allreduce_async_(tensor, *args), _output)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    """Reduces ``tensor`` in place and returns it."""
    _check_device(tensor, "allreduce_")
    args = _reduce_args("allreduce", average, op, prescale_factor, postscale_factor, process_set,
                        name)
    return _C.allreduce_(tensor, *args)


# --- Grouped allreduce ---------------------------------------------------------------------------

def _check_all(tensors, what):
    tensors = list(tensors)
    for t in tensors:
        _check_device(t, what)
    return tensors


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    """Starts one allreduce of every tensor (negotiated and fused as one); outputs are new."""
    tensors = _check_all(tensors, "grouped_allreduce_async")
    args = _reduce_args("grouped_allreduce", average, op, prescale_factor, postscale_factor,
                        process_set, name)
    return Handle(_C.grouped_allreduce_async(tensors, *args), _outputs)


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
        outs = _C.grouped_allreduce(inputs, *args)
    return [compression.decompress(o, ctx) for o, (_, ctx) in zip(outs, compressed)]


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    """Starts one in-place allreduce of every tensor."""
    tensors = _check_all(tensors, "grouped_allreduce_async_")
    args = _reduce_args("grouped_allreduce", average, op, prescale_factor, postscale_factor,
                        process_set, name)
    return Handle(_C.grouped_allreduce_async_(tensors, *args), _outputs)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    """Reduces every tensor in place, as one collective; returns them."""
    tensors = _check_all(tensors, "grouped_allreduce_")
    args = _reduce_args("grouped_allreduce", average, op, prescale_factor, postscale_factor,
                        process_set, name)
    return _C.grouped_allreduce_(tensors, *args)


# --- Allgather, broadcast, alltoall, reducescatter -----------------------------------------------

def allgather_async(tensor, name=None, process_set=global_process_set):
    """Starts an allgather (concatenation along the first dimension, in rank order)."""
    _check_device(tensor, "allgather_async")
    work = _C.allgather_async(tensor, _set_id(process_set), _name("allgather", name))
    return Handle(work, _output)


def allgather(tensor, name=None, process_set=global_process_set):
    """Every rank's tensor, concatenated along the first dimension in rank order; differentiable
    (the gradient is this rank's rows of the output gradient averaged over the ranks)."""
    _check_device(tensor, "allgather")
    set_id = _set_id(process_set)
    if tensor.requires_grad:
        return _ag.AllgatherFunction.apply(tensor, set_id, _name("allgather", name))
    return _C.allgather(tensor, set_id, _name("allgather", name))


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts a broadcast of root's tensor into a new tensor."""
    _check_device(tensor, "broadcast_async")
    work = _C.broadcast_async(tensor, root_rank, _set_id(process_set), _name("broadcast", name))
    return Handle(work, _output)


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """Root's tensor, as a new tensor on every rank; differentiable (root's gradient is the output
    gradient averaged over the ranks, the others' zero)."""
    _check_device(tensor, "broadcast")
    set_id = _set_id(process_set)
    if tensor.requires_grad:
        return _ag.BroadcastFunction.apply(tensor, root_rank, set_id, _name("broadcast", name))
    return _C.broadcast(tensor, root_rank, set_id, _name("broadcast", name))


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts an in-place broadcast of root's tensor."""
    _check_device(tensor, "broadcast_async_")
    work = _C.broadcast_async_(tensor, root_rank, _set_id(process_set), _name("broadcast", name))
    return Handle(work, _output)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    """Overwrites ``tensor`` with root's and returns it."""
    _check_device(tensor, "broadcast_")
    return _C.broadcast_(tensor, root_rank, _set_id(process_set), _name("broadcast", name))


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
    work = _C.alltoall_async(tensor, splits_t, _set_id(process_set), _name("alltoall", name))
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
    work = _C.reducescatter_async(tensor, op, prescale_factor, postscale_factor,
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
        out = _C.reducescatter(compressed, *args)
    return compression.decompress(out, ctx)


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


# Horovod's mpi_ops has the grouped allgather and reducescatter and the sparse allreduce too.
from cohort.torch.grouped_ops import (  # noqa: E402,F401  (after the names it imports from here)
    grouped_allgather,
    grouped_allgather_async,
    grouped_reducescatter,
    grouped_reducescatter_async,
    sparse_allreduce_async,
)
