"""Cohort's allreduce (cohort.torch, Horovod's API) for allreduce/common.py; run by cohortrun.
allreduce_horovod.py runs this same program on horovod.torch."""

import torch

import common


def main(hvd):
    """The benchmark on `hvd`, a module with Horovod's API (cohort.torch or horovod.torch)."""
    args = common.parse_args()
    hvd.init()
    barrier_tensor = torch.zeros(1)
    # One name per size, as a training loop's tensors have: the response cache can work.
    common.run(args, hvd.rank(), hvd.size(),
               lambda t: hvd.allreduce_(t, op=hvd.Sum, name=f"bench.{t.numel()}"),
               lambda: hvd.allreduce_(barrier_tensor, op=hvd.Sum, name="bench.barrier"))
    hvd.shutdown()


if __name__ == "__main__":
    import cohort.torch

    main(cohort.torch)
