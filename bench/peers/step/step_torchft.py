"""TorchFT's training step for step/common.py: its DistributedDataParallel and OptimizerWrapper
over one Manager, as TorchFT's train_ddp example does (zero_grad starts the step's quorum, step()
commits only if should_commit() agrees). Each rank is one replica group of one process, started
by torchrun with its own store and joined through the Lighthouse (run.sh starts both). The
Manager's state (for a replica that heals) is the model being trained and its optimizer.
"""

import os
from datetime import timedelta

import torch
from torch.distributed import ReduceOp
from torchft import DistributedDataParallel, Manager, ProcessGroupGloo
from torchft.optim import OptimizerWrapper

import common
import harness


class System:
    def __init__(self):
        self.rank = harness.env_int("REPLICA_GROUP_ID")
        self.world = harness.env_int("NUM_REPLICA_GROUPS")
        self._state = {}  # what the Manager sends to or loads from a healing replica
        self.manager = Manager(pg=ProcessGroupGloo(timeout=timedelta(seconds=60)),
                               min_replica_size=self.world, load_state_dict=self._load,
                               state_dict=self._save, replica_id=f"step_{self.rank}",
                               timeout=timedelta(seconds=60))
        self._commits = 0  # steps this program expects the Manager to have committed

    def _save(self):
        return {k: v.state_dict() for k, v in self._state.items()}

    def _load(self, state):
        for k, v in state.items():
            self._state[k].load_state_dict(v)

    def prepare(self, name, model, optimizer):
        self._state = {"model": model, "optimizer": optimizer}
        return DistributedDataParallel(self.manager, model), OptimizerWrapper(self.manager, optimizer)

    def check_step(self, name):
        """TorchFT swallows a failed allreduce and skips the optimizer step: that is an error here."""
        self._commits += 1
        if self.manager.current_step() != self._commits:
            raise RuntimeError(f"TorchFT: {name}: step {self._commits} was not committed (errored: "
                               f"{self.manager.errored()}, participants: "
                               f"{self.manager.num_participants()} of {self.world})")

    def sum_(self, t):
        """A sum over every replica group, in a quorum of its own."""
        self.manager.start_quorum()
        if self.manager.num_participants() != self.world:
            raise RuntimeError(f"TorchFT quorum has {self.manager.num_participants()} replica "
                               f"groups, expected {self.world}")
        self.manager.allreduce(t, reduce_op=ReduceOp.SUM).wait()
        self.manager.should_commit()
        self.check_step("allreduce")

    def barrier(self):
        self.sum_(torch.zeros(1))


def main():
    args = common.parse_args()
    system = System()
    common.run(args, system)
    system.manager.shutdown()
    os._exit(0)  # the Manager's threads can outlive shutdown(); the results are printed


if __name__ == "__main__":
    main()
