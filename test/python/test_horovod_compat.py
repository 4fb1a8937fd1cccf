"""Horovod's semantics where Cohort used to differ (issue 27): gradients of the collectives,
dropped handles, the grouped and sparse calls, int16, integer scaling, nccl_built, the optimizer's
zero gradients and Horovod's environment variables. Run on every rank under cohortrun (-np 2 and
-np 3); every wait is bounded by COHORT_TIMEOUT_SECONDS.
"""

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
