"""How a bench/peers program joins TorchFT (0.2.0) when it has no state to heal: each rank is one
replica group of one process (run.sh's launch_torchft starts a Lighthouse and one torchrun per
group), and the program works inside one quorum of every group. Used by the allreduce and commit
workloads; step and recovery build their Manager with their model's state instead.
"""

from torch.distributed import ReduceOp
from torchft import Manager, ProcessGroupGloo

import harness


def join(timeout):
    """A Manager in a quorum of every replica group: (manager, replica, world, allreduce_), where
    allreduce_(t) sums t in place over the groups and raises if TorchFT reports a failure."""
    replica, groups = harness.env_int("REPLICA_GROUP_ID"), harness.env_int("NUM_REPLICA_GROUPS")
    manager = Manager(pg=ProcessGroupGloo(timeout=timeout), min_replica_size=groups,
                      load_state_dict=lambda state: None, state_dict=lambda: {},
                      replica_id=f"bench_{replica}", timeout=timeout,
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

    return manager, replica, world, allreduce_
