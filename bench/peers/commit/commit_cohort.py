"""Cohort's elastic state (cohort.torch: hvd.elastic.TorchState) for commit/common.py; run by
cohortrun. commit() is TorchState.commit() (a collective: every rank keeps its copy), restore() is
TorchState.restore() (local). commit_horovod.py runs this same program on horovod.torch."""

import torch

import common


def main(hvd):
    """The benchmark on `hvd`, a module with Horovod's API (cohort.torch or horovod.torch)."""
    args = common.parse_args()
    hvd.init()
    barrier_tensor = torch.zeros(1)

    def method(model, optimizer):
        state = hvd.elastic.TorchState(model=model, optimizer=optimizer, epoch=0)
        return common.Method(state.commit, state.restore, how="TorchState.commit")

    common.run(args, hvd.rank(), hvd.size(), method,
               lambda: hvd.allreduce_(barrier_tensor, op=hvd.Sum, name="bench.barrier"))
    hvd.shutdown()


if __name__ == "__main__":
    import cohort.torch

    main(cohort.torch)
