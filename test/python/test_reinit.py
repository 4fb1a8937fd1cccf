"""hvd.init(); hvd.shutdown(); hvd.init() in one process, as Horovod's own test suite does between
tests: each init() meets the other ranks afresh (issue 26, item 9). Run on every rank under
cohortrun (-np 2 and -np 3) and alone (a world of one).
"""

import torch

import cohort.torch as hvd

CYCLES = 3


def test_init_allreduce_shutdown_three_times():
    for cycle in range(CYCLES):
        hvd.init()
        assert hvd.is_initialized()
        rank, size = hvd.rank(), hvd.size()
        total = hvd.allreduce(torch.full((100,), float(rank + cycle)), op=hvd.Sum)
        assert torch.equal(total, torch.full((100,), float(size * (size - 1) // 2 + size * cycle)))
        # Unnamed calls are numbered afresh by every runtime, alike on every rank.
        hvd.allreduce_(torch.ones(3), name=None, op=hvd.Sum)
        hvd.shutdown()
        assert not hvd.is_initialized()


def test_init_twice_without_shutdown_does_nothing():
    hvd.init()
    first = hvd.size()
    hvd.init()
    assert hvd.is_initialized() and hvd.size() == first
    hvd.shutdown()


def test_init_replaces_a_runtime_whose_peers_shut_down_without_it():
    """What Horovod's suite does when one of its tests failed on one rank only: the other ranks
    shut down while this one still waits in a collective, which fails; it never calls shutdown().
    Its next init() must meet the others afresh, not keep the runtime that ended under it."""
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    if size == 1:
        hvd.shutdown()
        return
    if rank == 0:
        try:
            hvd.barrier()  # the others are shutting down: it cannot complete
            raise AssertionError("a barrier that the other ranks never joined completed")
        except (RuntimeError, ValueError) as error:
            assert "shut down" in str(error), error
        assert hvd.is_initialized()  # ended under it, not shut down by it
    else:
        hvd.shutdown()
    hvd.init()
    assert hvd.size() == size and hvd.rank() == rank
    total = hvd.allreduce(torch.ones(4), name="after_reinit", op=hvd.Sum)
    assert torch.equal(total, torch.full((4,), float(size)))
    hvd.shutdown()
