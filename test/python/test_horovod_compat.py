"""Horovod's semantics where Cohort used to differ (issue 27): gradients of the collectives,
dropped handles, the grouped and sparse calls, remove_process_set, int16, integer scaling,
nccl_built, the optimizer's zero gradients and Horovod's environment variables. Run on every rank
under cohortrun (-np 2 and -np 3); every wait is bounded by COHORT_TIMEOUT_SECONDS.
"""

import os
import time

import pytest
import torch

import cohort.torch as hvd


@pytest.fixture(autouse=True, scope="module")
def world():
    hvd.init()
    yield


def weights(shape, rank):
    """Rank r's weights for a loss: the output gradient differs per rank, so averaging over the
    ranks and summing over them give different results."""
    n = 1
    for d in shape:
        n *= d
    return torch.arange(n, dtype=torch.float32).reshape(shape) + 10 * rank


def mean_weights(shape):
    return torch.stack([weights(shape, r) for r in range(hvd.size())]).mean(0)


# --- 1. gradients of allgather and broadcast are averaged over the ranks, as Horovod's ---------

def test_allgather_gradient_is_averaged_over_ranks():
    n, me = hvd.size(), hvd.rank()
    x = torch.ones(me + 1, 2, requires_grad=True)  # different first dimensions
    out = hvd.allgather(x)
    (out * weights(out.shape, me)).sum().backward()
    start = sum(r + 1 for r in range(me))
    want = mean_weights(out.shape)[start:start + me + 1]
    torch.testing.assert_close(x.grad, want)
    assert out.shape[0] == n * (n + 1) // 2


def test_broadcast_gradient_is_averaged_at_root_and_zero_elsewhere():
    for root in range(hvd.size()):
        x = torch.ones(3, 2, requires_grad=True)
        out = hvd.broadcast(x, root)
        (out * weights(out.shape, hvd.rank())).sum().backward()
        want = mean_weights(out.shape) if hvd.rank() == root else torch.zeros(3, 2)
        torch.testing.assert_close(x.grad, want)


# --- 2. a dropped handle does not block; a name in flight twice raises Horovod's error ---------

@pytest.mark.multi_rank
def test_dropped_handle_does_not_block_and_a_name_in_flight_twice_raises():
    t = torch.arange(4.0)
    if hvd.rank() == 0:
        start = time.monotonic()
        hvd.allgather_async(t, name="dropped")  # dropped at once, before any other rank sends
        with pytest.raises(ValueError, match="already in flight"):
            hvd.allgather_async(t, name="dropped")
        assert time.monotonic() - start < 5
    hvd.barrier()
    if hvd.rank() != 0:  # completes rank 0's dropped allgather
        torch.testing.assert_close(hvd.allgather(t, name="dropped"), t.repeat(hvd.size()))
    hvd.barrier()


def test_dropped_handles_complete_in_the_background():
    hvd.allreduce_async(torch.ones(1 << 16), name="dropped.out", op=hvd.Sum)  # input only there
    t = torch.ones(5)
    hvd.allreduce_async_(t, name="dropped.in_place", op=hvd.Sum)
    want = torch.full((5,), float(hvd.size()))
    deadline = time.monotonic() + 15
    while not torch.equal(t, want):  # written by the runtime once every rank has sent
        assert time.monotonic() < deadline, "the dropped in-place allreduce never completed"
        time.sleep(0.01)
    torch.testing.assert_close(hvd.allreduce(torch.ones(3), op=hvd.Sum), torch.full((3,), 1.0 *
                                                                                     hvd.size()))


# --- 3. autograd through reducescatter, grouped_allreduce and alltoall, as Horovod's ------------

@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average])
def test_reducescatter_gradient(op):
    n, me = hvd.size(), hvd.rank()
    x = torch.ones(2 * n, 3, requires_grad=True)
    out = hvd.reducescatter(x, op=op)
    (out * weights(out.shape, me)).sum().backward()
    factor = n if op == hvd.Sum else 1  # Horovod's: Sum multiplies by the size, Average not
    want = torch.cat([weights(out.shape, r) for r in range(n)]) * factor
    torch.testing.assert_close(x.grad, want)


def test_grouped_allreduce_gradient():
    a = torch.ones(3, requires_grad=True)
    b = torch.ones(2, 2, requires_grad=True)
    outs = hvd.grouped_allreduce([a, b], op=hvd.Sum)
    (2 * outs[0].sum() + 3 * outs[1].sum()).backward()
    torch.testing.assert_close(a.grad, torch.full((3,), 2.0 * hvd.size()))
    torch.testing.assert_close(b.grad, torch.full((2, 2), 3.0 * hvd.size()))


def test_alltoall_gradient_goes_back_to_the_senders():
    n, me = hvd.size(), hvd.rank()
    x = torch.ones(2 * n, requires_grad=True)  # 2 rows to every rank
    out, received = hvd.alltoall(x, splits=torch.full((n,), 2, dtype=torch.int32))
    assert received.tolist() == [2] * n and not received.requires_grad
    (out * weights(out.shape, me)).sum().backward()
    want = torch.cat([weights((2 * n,), j)[2 * me:2 * me + 2] for j in range(n)])
    torch.testing.assert_close(x.grad, want)


# --- 4. grouped allgather and reducescatter, sparse allreduce, remove_process_set ---------------

def test_grouped_allgather_values_async_and_gradient():
    n, me = hvd.size(), hvd.rank()
    mine = [torch.full((me + 1, 2), float(me)), torch.arange(3) + 10 * me]
    want = [torch.cat([torch.full((r + 1, 2), float(r)) for r in range(n)]),
            torch.cat([torch.arange(3) + 10 * r for r in range(n)])]
    for got in (hvd.grouped_allgather(mine, name="ga"),
                hvd.synchronize(hvd.grouped_allgather_async(mine, name="gaa")),
                hvd.grouped_allgather(mine)):
        assert len(got) == 2
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)
    x = torch.ones(me + 1, 2, requires_grad=True)
    (out,) = hvd.grouped_allgather([x])
    (out * weights(out.shape, me)).sum().backward()
    start = sum(r + 1 for r in range(me))
    torch.testing.assert_close(x.grad, mean_weights(out.shape)[start:start + me + 1])


def test_grouped_reducescatter_values_async_and_gradient():
    n, me = hvd.size(), hvd.rank()
    mine = [torch.full((2 * n, 2), float(me + 1)), torch.full((n,), float(me))]
    total = [float(sum(r + 1 for r in range(n))), float(sum(range(n)))]
    outs = hvd.grouped_reducescatter(mine, op=hvd.Sum, name="grs")
    torch.testing.assert_close(outs[0], torch.full((2, 2), total[0]))
    torch.testing.assert_close(outs[1], torch.full((1,), total[1]))
    outs = hvd.synchronize(hvd.grouped_reducescatter_async(mine, name="grsa"))  # Average
    torch.testing.assert_close(outs[0], torch.full((2, 2), total[0] / n))
    x = torch.ones(2 * n, 3, requires_grad=True)
    (out,) = hvd.grouped_reducescatter([x], op=hvd.Sum)
    (out * weights(out.shape, me)).sum().backward()
    torch.testing.assert_close(x.grad, torch.cat([weights(out.shape, r) for r in range(n)]) * n)


@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average])
def test_sparse_allreduce_async(op):
    n, me = hvd.size(), hvd.rank()
    mine = torch.sparse_coo_tensor([[me, n]], [me + 1.0, 1.0], (n + 1,))
    handle = hvd.sparse_allreduce_async(mine, name=f"sparse.{op}", op=op)
    got = handle() if op == hvd.Sum else hvd.synchronize(handle)  # Horovod calls the handle
    assert got.is_sparse
    want = torch.tensor([r + 1.0 for r in range(n)] + [float(n)])
    torch.testing.assert_close(got.to_dense(), want / (n if op == hvd.Average else 1))


def test_distributed_optimizer_with_sparse_gradients():
    n, me = hvd.size(), hvd.rank()
    torch.manual_seed(0)
    model = torch.nn.Embedding(n + 1, 2, sparse=True)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    before = model.weight.detach().clone()
    model(torch.tensor([me])).sum().backward()  # each rank touches its own row
    opt.step()
    want = before.clone()
    want[:n] -= 1.0 / n  # the averaged gradient: ones on each rank's row, over n ranks
    torch.testing.assert_close(model.weight.detach(), want)


@pytest.mark.multi_rank
def test_remove_process_set_as_horovod():
    n, me = hvd.size(), hvd.rank()
    assert hvd.remove_process_set(hvd.global_process_set) is False  # as Horovod: never removed
    assert hvd.remove_process_set(hvd.ProcessSet([0])) is False  # never added
    ends = hvd.add_process_set([0, n - 1])
    removed_id = ends.process_set_id
    member = me in (0, n - 1)
    if member:
        kept = hvd.allreduce_async(torch.ones(3), name="kept", op=hvd.Sum, process_set=ends)
    if me == 0:  # the set's other member never submits it
        stray = hvd.allreduce_async(torch.ones(3), name="stray", process_set=ends)
    assert hvd.remove_process_set(ends) is True
    assert ends.process_set_id is None
    if member:
        torch.testing.assert_close(hvd.synchronize(kept), torch.full((3,), 2.0))
    if me == 0:
        with pytest.raises(hvd.MismatchError, match=f"process set {removed_id} was removed"):
            hvd.synchronize(stray)
    with pytest.raises(ValueError, match=f"process set {removed_id} was removed"):
        hvd.allreduce(torch.ones(2), name="after", process_set=ends)
    assert hvd.remove_process_set(ends) is False  # invalidated
    again = hvd.add_process_set(ends)  # as Horovod: a removed set can be added again
    assert again.process_set_id > removed_id
    if member:
        torch.testing.assert_close(hvd.allreduce(torch.ones(2), name="again", op=hvd.Sum,
                                                 process_set=again),
                                   torch.full((2,), 2.0))
    assert hvd.remove_process_set(again) is True


def test_distributed_optimizer_outside_its_process_set_steps_alone():
    only_0 = hvd.add_process_set([0])
    model = torch.nn.Linear(2, 1, bias=False)
    torch.nn.init.constant_(model.weight, 1.0)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                   named_parameters=model.named_parameters(), process_set=only_0)
    model(torch.full((1, 2), float(hvd.rank() + 1))).sum().backward()
    opt.step()  # as Horovod: no communication on a rank outside the set, its own gradient
    torch.testing.assert_close(model.weight.detach(), torch.full((1, 2), -float(hvd.rank())))
    assert hvd.remove_process_set(only_0) is True


# --- 5. int16 (torch.ShortTensor) through allgather, broadcast and alltoall --------------------

def test_int16_allgather_broadcast_and_alltoall():
    n, me = hvd.size(), hvd.rank()
    mine = (torch.arange(2 * n, dtype=torch.int16) - 1000 * me).reshape(n, 2)  # negatives too
    everyone = [(torch.arange(2 * n, dtype=torch.int16) - 1000 * r).reshape(n, 2)
                for r in range(n)]
    got = hvd.allgather(mine)
    assert got.dtype == torch.int16
    torch.testing.assert_close(got, torch.cat(everyone))
    got = hvd.synchronize(hvd.allgather_async(mine.t(), name="i16"))  # non-contiguous
    torch.testing.assert_close(got, torch.cat([e.t() for e in everyone]))
    root = n - 1
    got = hvd.broadcast(mine, root)
    assert got.dtype == torch.int16
    torch.testing.assert_close(got, everyone[root])
    t = mine.clone().t()  # non-contiguous, in place
    assert hvd.broadcast_(t, root) is t
    torch.testing.assert_close(t, everyone[root].t())
    got = hvd.alltoall(mine)  # row j to rank j
    assert got.dtype == torch.int16
    torch.testing.assert_close(got, torch.stack([e[me] for e in everyone]))
    with pytest.raises(hvd.InvalidArgument, match="int16 is not supported"):
        hvd.reducescatter(mine)


# --- 6. integer scaling truncates, nccl_built, zero gradients, Horovod's variables ---------------

def test_integer_scaling_and_average_truncate_as_horovod():
    n = hvd.size()
    for dtype in (torch.int32, torch.int64):
        seven = torch.full((4,), 7, dtype=dtype)
        if seven.is_cuda:
            # Device scaling is NCCL's PreMulSum, floating-point only (docs/horovod-compatibility.md):
            # refused by name, on every rank alike, and the next collective still runs.
            with pytest.raises(hvd.InvalidArgument, match="need a floating-point type"):
                hvd.allreduce(seven, op=hvd.Sum, prescale_factor=0.5)
            with pytest.raises(hvd.InvalidArgument, match="need a floating-point type"):
                hvd.allreduce(seven)  # an average
            torch.testing.assert_close(hvd.allreduce(seven, op=hvd.Sum), torch.full_like(seven, 7 * n))
            continue
        got = hvd.allreduce(seven, op=hvd.Sum, prescale_factor=0.5)  # 3.5 on each rank
        torch.testing.assert_close(got, torch.full((4,), 3 * n, dtype=dtype))
        got = hvd.allreduce(-seven, op=hvd.Sum, prescale_factor=0.5)  # toward zero
        torch.testing.assert_close(got, torch.full((4,), -3 * n, dtype=dtype))
        three = torch.full((4,), 3, dtype=dtype)
        got = hvd.allreduce(three, op=hvd.Sum, postscale_factor=0.3)  # 0.9 n: 1.8, 2.7
        torch.testing.assert_close(got, torch.full((4,), int(0.9 * n), dtype=dtype))
        # Average of n on rank 0 and 1 elsewhere: (2n - 1) / n, truncated to 1 (not rounded to 2).
        mine = torch.full((4,), n if hvd.rank() == 0 else 1, dtype=dtype)
        torch.testing.assert_close(hvd.allreduce(mine), torch.ones(4, dtype=dtype))


def test_nccl_built_is_the_nccl_version_or_zero():
    version = hvd.nccl_built()
    assert type(version) is int  # pylint: disable=unidiomatic-typecheck
    assert version == 0 or version >= 2000  # NCCL_VERSION_CODE, e.g. 21805
    assert type(hvd.cuda_built()) is bool  # pylint: disable=unidiomatic-typecheck
    if torch.version.cuda is None:  # a CPU torch: no CUDA tensor can reach Cohort
        assert not hvd.cuda_built()


def test_broadcast_optimizer_state_gives_a_fresh_optimizer_zero_gradients():
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.frozen = torch.nn.Parameter(torch.ones(2), requires_grad=False)
            self.trained = torch.nn.Parameter(torch.ones(3))

    model = Model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    hvd.broadcast_optimizer_state(opt, root_rank=0, model=model)
    assert model.frozen.grad is None
    torch.testing.assert_close(model.trained.grad, torch.zeros(3))


def test_cohortrun_exports_horovods_placement_variables():
    want = {"HOROVOD_RANK": hvd.rank(), "HOROVOD_SIZE": hvd.size(),
            "HOROVOD_LOCAL_RANK": hvd.local_rank(), "HOROVOD_LOCAL_SIZE": hvd.local_size(),
            "HOROVOD_CROSS_RANK": hvd.cross_rank(), "HOROVOD_CROSS_SIZE": hvd.cross_size()}
    assert {name: os.environ.get(name) for name in want} == \
        {name: str(value) for name, value in want.items()}
    assert "OMPI_COMM_WORLD_RANK" not in os.environ


def test_sparse_as_dense_gives_the_optimizer_a_sparse_gradient_again():
    n, me = hvd.size(), hvd.rank()
    model = torch.nn.Embedding(n + 1, 2, sparse=True)
    opt = hvd.DistributedOptimizer(torch.optim.SparseAdam(list(model.parameters()), lr=0.1),
                                   named_parameters=model.named_parameters(),
                                   sparse_as_dense=True)
    model(torch.tensor([me])).sum().backward()
    opt.synchronize()
    assert model.weight.grad.is_sparse  # SparseAdam refuses dense gradients
    want = torch.zeros(n + 1, 2)
    want[:n] = 1.0 / n
    torch.testing.assert_close(model.weight.grad.to_dense(), want)
    with opt.skip_synchronize():
        opt.step()


def test_optimizer_names_every_parameter_alike_on_every_rank():
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Linear(3, 2))
    opt = hvd.DistributedOptimizer(torch.optim.SGD(
        [{"params": model[0].parameters()}, {"params": model[1].parameters()}], lr=0.1))
    names = opt._parameter_names  # pylint: disable=protected-access
    assert len(names) == 4 and len(set(names.values())) == 4
    assert all(n == set(names.values()) for n in hvd.allgather_object(set(names.values())))


# --- 7. the package's own host tensors ignore torch's default device ---------------------------

@pytest.mark.skipif(not hasattr(torch, "get_default_device"), reason="torch 2.3 or newer")
def test_host_metadata_is_made_on_the_cpu_whatever_the_default_device():
    # torch.set_default_device("cuda") is common in GPU scripts; the package's own bookkeeping
    # tensors (the optimizer state a non-root rank receives, allgather's row counts, alltoall's
    # splits) must stay on the CPU, like the calls' CPU tensors. "meta" stands in for "cuda" here.
    n, me = hvd.size(), hvd.rank()
    model = torch.nn.Linear(2, 2, device="cpu")
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    if me == 0:  # only root has state: the others receive its tensors
        model(torch.ones(1, 2, device="cpu")).sum().backward()
        opt.step()
    x = torch.full((1, 2), float(me), device="cpu", requires_grad=True)
    previous = torch.get_default_device()
    torch.set_default_device("meta")
    try:
        hvd.broadcast_optimizer_state(opt, root_rank=0)
        gathered = hvd.allgather(x, name="meta.gather")  # differentiable: counts the rows
        sent = torch.arange(n, dtype=torch.float32, device="cpu")
        received = hvd.alltoall(sent, splits=[1] * n, name="meta.alltoall")[0]
    finally:
        torch.set_default_device(previous)
    for p in model.parameters():
        assert opt.state[p]["momentum_buffer"].device.type == "cpu"
    assert gathered.device.type == "cpu" and gathered.shape == (n, 2)
    torch.testing.assert_close(received, torch.full((n,), float(me), device="cpu"))
