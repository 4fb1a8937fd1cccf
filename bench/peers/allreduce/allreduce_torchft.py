"""TorchFT's allreduce (Manager.allreduce over its fault-tolerant ProcessGroupGloo) for
allreduce/common.py. Each rank is one replica group of one process, started by torchrun with its
own store and joined through the Lighthouse, as TorchFT's train_ddp example does (run.sh starts
both). All sizes run inside one quorum: start_quorum before, should_commit after, untimed.
"""

import os
from datetime import timedelta

import torch
from torch.distributed import ReduceOp
from torchft import Manager, ProcessGroupGloo

import common
import harness


def main():
    args = common.parse_args()
    replica = harness.env_int("REPLICA_GROUP_ID")
    groups = harness.env_int("NUM_REPLICA_GROUPS")
    manager = Manager(pg=ProcessGroupGloo(timeout=timedelta(seconds=60)), min_replica_size=groups,
                      load_state_dict=lambda state: None, state_dict=lambda: {},
                      replica_id=f"bench_{replica}", timeout=timedelta(seconds=60),
                      init_sync=False)  # no state to sync: else one replica heals in step 0
    manager.start_quorum()
    world = manager.num_participants()
    if world != groups or not manager.is_participating():
        raise RuntimeError(f"TorchFT quorum has {world} replica groups, expected {groups}, "
                           f"this one participating: {manager.is_participating()}")

    def allreduce_(t):
        manager.allreduce(t, reduce_op=ReduceOp.SUM).wait()
        if manager.errored():  # TorchFT swallows a failed allreduce and reports it here
            raise RuntimeError(f"TorchFT: the allreduce failed: {manager.errored()}")

    barrier_tensor = torch.zeros(1)
    common.run(args, replica, world, allreduce_, lambda: allreduce_(barrier_tensor))
    if not manager.should_commit():
        raise RuntimeError("TorchFT: should_commit() refused the benchmark's step (an allreduce failed)")
    manager.shutdown()
    os._exit(0)  # the Manager's threads can outlive shutdown(); the results are printed


if __name__ == "__main__":
    main()
