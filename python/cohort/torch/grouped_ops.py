"""Horovod's grouped allgather and reducescatter, over Cohort's runtime.

The core has no grouped allgather or reducescatter: a grouped call submits one collective per
tensor at once (the runtime negotiates and runs them side by side) and its handle completes when
all have. A given ``name`` becomes ``<name>.<i>`` for the i-th tensor; unnamed members are
numbered like single unnamed calls. ``mpi_ops`` re-exports every name here, as Horovod's has them.
"""

from cohort.torch import autograd_ops as _ag
from cohort.torch import tensor_ops as _ops
from cohort.torch.basics import _set_id, global_process_set
from cohort.torch.compression import Compression
from cohort.torch.op_common import (Average, Handle, _check_all, _check_op, _GroupWork,
                                    synchronize)


def _wait_all(group):
    return [w.wait() for w in group.works]


def _names(op, name, count):
    # Each tensor its own collective, numbered under the user's name, without the operation (as
    # mpi_ops._name): a name used by different grouped operations on different ranks mismatches.
    return [""] * count if name is None else [f"{name}.{i}" for i in range(count)]


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    """Starts an allgather of every tensor; ``synchronize`` returns the list of results."""
    tensors = _check_all(tensors, "grouped_allgather_async")
    set_id = _set_id(process_set)
    works = [_ops.allgather_async(t, set_id, n)
             for t, n in zip(tensors, _names("grouped_allgather", name, len(tensors)))]
    return Handle(_GroupWork(f"grouped_allgather.{name}", works), _wait_all)


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """Every tensor allgathered (each concatenated along its first dimension in rank order);
    differentiable as ``allgather``."""
    tensors = _check_all(tensors, "grouped_allgather")
    if not any(t.requires_grad for t in tensors):
        return synchronize(grouped_allgather_async(tensors, name, process_set))
    names = _names("grouped_allgather", name, len(tensors))
    return list(_ag.GroupedAllgatherFunction.apply(_set_id(process_set), names, *tensors))


def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=global_process_set,
                                prescale_factor=1.0, postscale_factor=1.0):
    """Starts a reducescatter of every tensor; ``synchronize`` returns this rank's blocks."""
    tensors = _check_all(tensors, "grouped_reducescatter_async")
    op, set_id = _check_op(op), _set_id(process_set)
    works = [_ops.reducescatter_async(t, op, prescale_factor, postscale_factor, set_id, n)
             for t, n in zip(tensors, _names("grouped_reducescatter", name, len(tensors)))]
    return Handle(_GroupWork(f"grouped_reducescatter.{name}", works), _wait_all)


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    """Every tensor reduced, and this rank's block of each; differentiable as ``reducescatter``."""
    tensors = _check_all(tensors, "grouped_reducescatter")
    compressed = [compression.compress(t) for t in tensors]
    inputs = [c for c, _ in compressed]
    if any(t.requires_grad for t in inputs):
        names = _names("grouped_reducescatter", name, len(inputs))
        outs = _ag.GroupedReducescatterFunction.apply(
            _check_op(op), prescale_factor, postscale_factor, _set_id(process_set), names, *inputs)
    else:
        outs = synchronize(grouped_reducescatter_async(inputs, name, op, process_set,
                                                       prescale_factor, postscale_factor))
    return [compression.decompress(o, ctx) for o, (_, ctx) in zip(outs, compressed)]
