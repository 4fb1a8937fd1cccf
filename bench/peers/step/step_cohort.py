"""Cohort's training step (cohort.torch, Horovod's API) for step/common.py; run by cohortrun.
step_horovod.py runs this same program on horovod.torch.

Cohort at its best documented setting (docs/benchmarks.md, issue 12): DistributedOptimizer with
one grouped allreduce at step() for a small model, and num_groups=4 (each group sent from the
backward hooks as soon as it is complete) for the large ones. Horovod at its documented default:
one allreduce per gradient from the backward hooks, fused by its background loop.
"""

import torch

import common

COHORT_GROUPS = {"digits": 0, "mlp25m": 4, "tf50m": 4}


class System:
    """Data-parallel training through hvd, a module with Horovod's API."""

    def __init__(self, hvd, groups):
        self.hvd, self.groups = hvd, groups
        hvd.init()
        self.rank, self.world = hvd.rank(), hvd.size()
        self._barrier = torch.zeros(1)

    def prepare(self, name, model, optimizer):
        self.hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        # Named per model: the same layer names in two models are different tensors.
        named = [(f"{name}.{n}", p) for n, p in model.named_parameters()]
        extra = {"num_groups": self.groups[name]} if self.groups.get(name) else {}
        return model, self.hvd.DistributedOptimizer(optimizer, named_parameters=named, **extra)

    def sum_(self, t):
        self.hvd.allreduce_(t, op=self.hvd.Sum, name="step.check")

    def barrier(self):
        self.hvd.allreduce_(self._barrier, op=self.hvd.Sum, name="step.barrier")

    def check_step(self, name):
        pass  # a failed collective raises


def main(hvd, groups):
    args = common.parse_args()
    common.run(args, System(hvd, groups))
    hvd.shutdown()


if __name__ == "__main__":
    import cohort.torch

    main(cohort.torch, COHORT_GROUPS)
