"""hvd.init() sizes torch's thread pool to this rank's share of the host's cores when the user has
not (OMP_NUM_THREADS unset), as torchrun does, and leaves it alone when they have. Run under
cohortrun at -np 2, once without OMP_NUM_THREADS and once with it set (test/python/CMakeLists.txt).
"""

import os

import torch

import cohort.torch as hvd


def test_torch_threads_are_this_ranks_share_of_the_cores_unless_the_user_chose():
    before = torch.get_num_threads()
    hvd.init()
    cores = len(os.sched_getaffinity(0))
    share = max(1, cores // hvd.local_size())
    if "OMP_NUM_THREADS" in os.environ:
        assert torch.get_num_threads() == before  # torch caps OMP_NUM_THREADS at the cores
    else:
        assert hvd.local_size() >= 2
        assert torch.get_num_threads() == min(before, share)
