"""Cohort's recovery program (cohort.torch: hvd.elastic.run, TorchState, ElasticSampler, as
docs/elastic-guide.md says) for recovery/common.py, run by cohortrun in elastic mode with a host
discovery script (recovery/workload.sh). recovery_horovod.py runs this same program on
horovod.torch. A commit every --commit-every steps and at each epoch's end; a removal is asked for
by rank 0 rewriting the discovery script's host list (WORK/hosts) to one slot fewer.
"""

import os
import time

import torch

import common
import models


class Job:
    def __init__(self, hvd, args):
        self.hvd, self.args = hvd, args
        self.x, self.y = common.data(args)
        self.model = models.build(args.model)
        if args.optimizer == "zero":  # Adam's moments sharded, committed with a replica
            self.optimizer = hvd.ZeroRedundancyOptimizer(
                self.model.parameters(), torch.optim.Adam,
                lr=common.learning_rate(args, hvd.size()))
        else:
            local = common.local_optimizer(args, self.model.parameters(), hvd.size())
            self.optimizer = hvd.DistributedOptimizer(
                local, named_parameters=self.model.named_parameters())
        self.sampler = hvd.elastic.ElasticSampler(torch.utils.data.TensorDataset(self.x, self.y),
                                                  shuffle=True, seed=42)
        self.state = hvd.elastic.TorchState(model=self.model, optimizer=self.optimizer,
                                            sampler=self.sampler, epoch=0, step=0,
                                            counts=common.new_counts(args))

    def train(self, state):
        self.entered()
        while state.epoch < self.args.epochs:
            for i, batch in enumerate(self.batches()):
                self.step(state, i, batch)
                if state.step % self.args.commit_every == 0:
                    state.commit()
            state.commit()
            state.epoch += 1
            self.sampler.set_epoch(state.epoch)
            state.commit()

    def entered(self):
        """After a reset, where the time went: ENTER t=<the sync's end> and the reset's phases
        (hvd.elastic.last_reset_timings: leaving the old world, the assignment, connecting); the
        sync is from the end of connecting to t."""
        hvd = self.hvd
        if not hasattr(hvd.elastic, "last_reset_timings") or hvd.elastic.resets() == 0:
            return
        t = hvd.elastic.last_reset_timings()
        print(f"ENTER t={time.time():.6f} rank={hvd.rank()} world={hvd.size()} "
              f"teardown={t.teardown:.3f} assignment={t.assignment:.3f} connect={t.connect:.3f}",
              flush=True)

    def batches(self):
        """This rank's unprocessed samples in batches, as many on every rank."""
        mine = list(iter(self.sampler))
        longest = int(self.hvd.allgather(torch.tensor([len(mine)]), name="recovery.lengths").max())
        b = self.args.batch
        return [mine[i * b:(i + 1) * b] for i in range(-(-longest // b))]

    def step(self, state, i, batch):
        hvd, args = self.hvd, self.args
        t0 = time.time()
        self.event(state.step)
        ids = torch.tensor(batch, dtype=torch.int64)
        self.optimizer.zero_grad()
        common.forward_backward(self.model, self.x, self.y, ids)
        self.optimizer.step()
        reduced = hvd.allreduce(common.step_counts(args, ids), op=hvd.Sum, name="recovery.counts")
        state.counts = common.add_counts(state.counts, state.epoch, reduced)
        self.sampler.record_batch(i, args.batch)
        state.step += 1
        common.step_done(args, t0, state.epoch, state.step, hvd.size(), hvd.rank())

    def event(self, step):
        """The kill (the chosen rank), or the removal (rank 0 drops a slot from the host list)."""
        rank = self.hvd.rank()
        if self.args.kind == "kill" and common.event_due(self.args, step, rank):
            common.kill_self(rank)
        if self.args.kind == "remove" and common.event_due(self.args, step, rank, actor=0):
            args = self.args
            hosts = os.path.join(args.work, "hosts")
            with open(hosts + ".new", "w") as f:
                f.write(f"localhost:{args.job_size - 1}\n")
            os.replace(hosts + ".new", hosts)
            common.announce_removal(rank)


def main(hvd):
    args = common.parse_args()
    hvd.init()
    job = Job(hvd, args)
    hvd.elastic.run(job.train)(job.state)
    if hvd.rank() == 0:
        common.account(job.state.counts)
    hvd.shutdown()


if __name__ == "__main__":
    import cohort.torch

    main(cohort.torch)
