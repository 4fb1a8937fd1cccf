"""TorchFT's allreduce (Manager.allreduce over its fault-tolerant ProcessGroupGloo) for
allreduce/common.py. Each rank is one replica group of one process, started by torchrun with its
own store and joined through the Lighthouse, as TorchFT's train_ddp example does (run.sh starts
both). All sizes run inside one quorum: start_quorum before, should_commit after, untimed.
"""

import os
from datetime import timedelta

import torch

import common
import torchft_quorum


def main():
    args = common.parse_args()
    manager, replica, world, allreduce_ = torchft_quorum.join(timedelta(seconds=60))
    barrier_tensor = torch.zeros(1)
    common.run(args, replica, world, allreduce_, lambda: allreduce_(barrier_tensor))
    if not manager.should_commit():
        raise RuntimeError("TorchFT: should_commit() refused the benchmark's step (an allreduce failed)")
    manager.shutdown()
    os._exit(0)  # the Manager's threads can outlive shutdown(); the results are printed


if __name__ == "__main__":
    main()
