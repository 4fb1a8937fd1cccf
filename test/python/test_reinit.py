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
