"""TorchFT's recovery program for recovery/common.py: one replica group of one process per
worker, joined through the Lighthouse (recovery/workload.sh starts it and restarts a killed
group: the replacement). A Manager with state_dict/load_state_dict (model, optimizer, epoch,
position, counts): a replacement heals from a live group. Data as TorchFT's train_ddp example:
torchft.data.DistributedSampler sharded by replica group. A step counts (STEP line, counts, the
optimizer step) only when should_commit() is true.
"""

import os
import time
from datetime import timedelta

import torch
from torch.utils.data import TensorDataset
from torchft import Manager, ProcessGroupGloo
from torchft.data import DistributedSampler

import common
import harness
import models


class Replica:
    def __init__(self, args):
        self.args = args
        self.replica = harness.env_int("REPLICA_GROUP_ID")
        self.groups = harness.env_int("NUM_REPLICA_GROUPS")
        self.x, self.y = common.data(args)
        self.model = models.build(args.model)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01 * self.groups,
                                         momentum=0.9)
        self.pos = {"epoch": 0, "in_epoch": 0, "step": 0}
        self.counts = common.new_counts(args)
        self.manager = Manager(pg=ProcessGroupGloo(timeout=timedelta(seconds=10)),
                               min_replica_size=max(1, self.groups // 2),
                               load_state_dict=self.load, state_dict=self.save,
                               replica_id=f"recovery_{self.replica}", use_async_quorum=False,
                               timeout=timedelta(seconds=10))
        self.sampler = DistributedSampler(TensorDataset(self.x, self.y), replica_rank=self.replica,
                                          num_replica_groups=self.groups, group_rank=0,
                                          num_replicas=1, shuffle=True, seed=42)

    def save(self):
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                "pos": dict(self.pos), "counts": self.counts}

    def load(self, state):
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.pos, self.counts = dict(state["pos"]), state["counts"].clone()

    def batch(self):
        self.sampler.set_epoch(self.pos["epoch"])
        mine = list(iter(self.sampler))
        start = self.pos["in_epoch"] * self.args.batch
        return mine[start:start + self.args.batch], len(mine)

    def step(self):
        """One attempted step; returns whether it was committed."""
        t0 = time.time()
        self.manager.start_quorum()
        if self.args.kind == "kill" and common.event_due(self.args, self.pos["step"],
                                                                self.replica):
            common.kill_self(self.replica)
        batch, length = self.batch()
        ids = torch.tensor(batch, dtype=torch.int64)
        self.optimizer.zero_grad()
        common.forward_backward(self.model, self.x, self.y, ids)
        reduced = common.step_counts(self.args, ids)
        works = [self.manager.allreduce(p.grad) for p in self.model.parameters()]
        works.append(self.manager.allreduce(reduced, reduce_op=torch.distributed.ReduceOp.SUM))
        for w in works:
            w.wait()
        if not self.manager.should_commit():
            return
        self.optimizer.step()
        self.counts = common.add_counts(self.counts, self.pos["epoch"], reduced)
        self.advance(length)
        common.step_done(self.args, t0, self.pos["epoch"], self.pos["step"],
                         self.manager.num_participants(), self.replica)

    def advance(self, length):
        pos = self.pos
        pos["step"] += 1
        pos["in_epoch"] += 1
        if pos["in_epoch"] * self.args.batch >= length:
            pos["epoch"], pos["in_epoch"] = pos["epoch"] + 1, 0

    def leave_due(self):
        """The clean removal: the chosen group shuts its Manager down and exits 0."""
        return self.args.kind == "remove" and common.event_due(self.args, self.pos["step"],
                                                               self.replica)


def main():
    replica = Replica(common.parse_args())
    while replica.pos["epoch"] < replica.args.epochs:
        if replica.leave_due():
            common.announce_removal(replica.replica)
            break
        replica.step()
    if replica.replica == 0:
        common.account(replica.counts)
    replica.manager.shutdown()
    os._exit(0)  # the Manager's threads can outlive shutdown()


if __name__ == "__main__":
    main()
