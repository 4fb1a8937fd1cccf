"""torch.distributed's gloo allreduce for allreduce/common.py; run by torchrun."""

import torch
import torch.distributed as dist

import common


def main():
    args = common.parse_args()
    dist.init_process_group("gloo")
    barrier_tensor = torch.zeros(1)
    common.run(args, dist.get_rank(), dist.get_world_size(), lambda t: dist.all_reduce(t),
               lambda: dist.all_reduce(barrier_tensor))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
