"""PyTorch's DistributedDataParallel over torch.distributed's gloo (its defaults: 25 MB buckets
allreduced from the backward pass) for step/common.py; run by torchrun."""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import common


class System:
    def __init__(self):
        dist.init_process_group("gloo")
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self._barrier = torch.zeros(1)

    def prepare(self, name, model, optimizer):
        return DistributedDataParallel(model), optimizer  # broadcasts rank 0's parameters

    def sum_(self, t):
        dist.all_reduce(t)

    def barrier(self):
        dist.all_reduce(self._barrier)

    def check_step(self, name):
        pass  # a failed collective raises


def main():
    args = common.parse_args()
    common.run(args, System())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
