"""The autograd Functions of cohort.torch's collectives, with Horovod's backward passes.

``mpi_ops`` and ``grouped_ops`` apply them when an input requires grad. Each forward runs the
collective on ``_C`` directly; each backward runs the collective Horovod's does on the output
gradient, unnamed (so every rank must run its backward passes in the same order, as in Horovod).
"""

import torch

from cohort import _C
from cohort.torch import tensor_ops as _ops

_Sum = _C.ReduceOp.SUM
_Average = _C.ReduceOp.AVERAGE


def _set_index(set_id):
    """This rank's position in the process set (its rank in the set)."""
    return _C.process_set_ranks(set_id).index(_C.rank())


def _my_rows(grads, rows, set_id):
    """This rank's first-dimension block of each of ``grads``, given every rank's row count."""
    index = _set_index(set_id)
    return [g[sum(r[:index]):sum(r[:index]) + r[index]] for g, r in zip(grads, rows)]


def _rows_of_every_rank(tensors, set_id):
    counts = torch.tensor([t.shape[0] if t.dim() > 0 else 1 for t in tensors], dtype=torch.int64,
                          device="cpu")  # host metadata, whatever torch's default device
    return _ops.allgather(counts.reshape(1, -1), set_id, "").t().tolist()


def _scaled(grad, op, set_id, prescale, postscale):
    """Horovod's reducescatter backward: the gradient times the set's size for Sum, and times the
    scale factors; Average leaves it as it is."""
    if op == _Sum:
        grad = grad * len(_C.process_set_ranks(set_id))
    if prescale != 1.0:
        grad = grad * prescale
    if postscale != 1.0:
        grad = grad * postscale
    return grad


class AllreduceFunction(torch.autograd.Function):
    """Allreduce; backward: the same allreduce of the output gradient."""

    @staticmethod
    def forward(ctx, tensor, op, prescale, postscale, set_id, name):
        ctx.args = (op, prescale, postscale, set_id)
        return _ops.allreduce(tensor, op, prescale, postscale, set_id, name)

    @staticmethod
    def backward(ctx, grad_output):
        grad = _ops.allreduce(grad_output.contiguous(), *ctx.args, "")
        return grad, None, None, None, None, None


class GroupedAllreduceFunction(torch.autograd.Function):
    """Grouped allreduce; backward: the same grouped allreduce of the output gradients."""

    @staticmethod
    def forward(ctx, op, prescale, postscale, set_id, name, *tensors):
        ctx.args = (op, prescale, postscale, set_id)
        return tuple(_ops.grouped_allreduce(list(tensors), op, prescale, postscale, set_id, name))

    @staticmethod
    def backward(ctx, *grads):
        grads = _ops.grouped_allreduce([g.contiguous() for g in grads], *ctx.args, "")
        return (None, None, None, None, None, *grads)


class AllgatherFunction(torch.autograd.Function):
    """Allgather; backward (Horovod's): this rank's rows of the output gradient averaged over the
    set's ranks."""

    @staticmethod
    def forward(ctx, tensor, set_id, name):
        ctx.set_id = set_id
        ctx.rows = _rows_of_every_rank([tensor], set_id)
        return _ops.allgather(tensor, set_id, name)

    @staticmethod
    def backward(ctx, grad_output):
        grad = _ops.allreduce(grad_output.contiguous(), _Average, 1.0, 1.0, ctx.set_id, "")
        return _my_rows([grad], ctx.rows, ctx.set_id)[0], None, None


class GroupedAllgatherFunction(torch.autograd.Function):
    """Grouped allgather; backward as AllgatherFunction's, for each tensor."""

    @staticmethod
    def forward(ctx, set_id, names, *tensors):
        ctx.set_id = set_id
        ctx.rows = _rows_of_every_rank(tensors, set_id)
        works = [_ops.allgather_async(t, set_id, n) for t, n in zip(tensors, names)]
        return tuple(w.wait() for w in works)

    @staticmethod
    def backward(ctx, *grads):
        grads = _ops.grouped_allreduce([g.contiguous() for g in grads], _Average, 1.0, 1.0,
                                     ctx.set_id, "")
        return (None, None, *_my_rows(grads, ctx.rows, ctx.set_id))


class BroadcastFunction(torch.autograd.Function):
    """Broadcast; backward (Horovod's): root gets the output gradient averaged over the set's
    ranks, the others zeros."""

    @staticmethod
    def forward(ctx, tensor, root_rank, set_id, name):
        ctx.args = (root_rank, set_id)
        return _ops.broadcast(tensor, root_rank, set_id, name)

    @staticmethod
    def backward(ctx, grad_output):
        root_rank, set_id = ctx.args
        grad = _ops.allreduce(grad_output.contiguous(), _Average, 1.0, 1.0, set_id, "")
        if _C.rank() != root_rank:
            grad = torch.zeros_like(grad)
        return grad, None, None, None


class AlltoallFunction(torch.autograd.Function):
    """Alltoall; backward (Horovod's): the output gradient sent back, each rank's rows to the rank
    they came from."""

    @staticmethod
    def forward(ctx, tensor, splits, set_id, name):
        ctx.set_id = set_id
        work = _ops.alltoall_async(tensor, splits, set_id, name)
        output, received = work.wait(), work.received_splits()
        ctx.received = received
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx, grad_output, _grad_received):
        work = _ops.alltoall_async(grad_output.contiguous(), ctx.received, ctx.set_id, "")
        return work.wait(), None, None, None


class ReducescatterFunction(torch.autograd.Function):
    """Reducescatter; backward (Horovod's): the allgather of the output gradient, times the set's
    size for Sum and times the scale factors."""

    @staticmethod
    def forward(ctx, tensor, op, prescale, postscale, set_id, name):
        ctx.args = (op, set_id, prescale, postscale)
        return _ops.reducescatter(tensor, op, prescale, postscale, set_id, name)

    @staticmethod
    def backward(ctx, grad_output):
        grad = _scaled(grad_output, *ctx.args)
        return _ops.allgather(grad.contiguous(), ctx.args[1], ""), None, None, None, None, None


class GroupedReducescatterFunction(torch.autograd.Function):
    """Grouped reducescatter; backward as ReducescatterFunction's, for each tensor."""

    @staticmethod
    def forward(ctx, op, prescale, postscale, set_id, names, *tensors):
        ctx.args = (op, set_id, prescale, postscale)
        works = [_ops.reducescatter_async(t, op, prescale, postscale, set_id, n)
                 for t, n in zip(tensors, names)]
        return tuple(w.wait() for w in works)

    @staticmethod
    def backward(ctx, *grads):
        works = [_ops.allgather_async(_scaled(g, *ctx.args).contiguous(), ctx.args[1], "")
                 for g in grads]
        return (None, None, None, None, None, *(w.wait() for w in works))
