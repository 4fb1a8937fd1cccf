"""The main job's training in Python: examples/torch/digits_cnn.cc written with cohort.torch.

A small convolutional network learns scikit-learn's handwritten digits (8x8 images, 10 classes),
with Horovod's elastic API as Cohort's Python package provides it: DistributedOptimizer averages
the gradients, TorchState keeps what survives a failure (model, optimizer, epoch, sampler, and per
epoch how many times each sample was trained, from an allgather of every step's sample ids), the
ElasticSampler hands each rank its share of an epoch. Rank 0 prints, at each epoch's end, whether
every sample was trained exactly once in the committed history, and at the end the accuracy on a
held-out fifth of the data.

    cohortrun -np 2 /usr/bin/python3 examples/torch/train_digits.py --epochs 6
    examples/elastic_demo.sh --program train_digits.py BUILD_DIR     # elastic, with a kill

Debian's torch is importable only by /usr/bin/python3; the package is in BUILD_DIR/python
(PYTHONPATH).
"""

import argparse
import gzip
import math
import os
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import cohort.torch as hvd

DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
# The phases of the last reset, as C++'s cohort::elastic::last_reset_timings(), if the package has
# them; without them a recovery time counts only from the reset callback on.
TIMINGS = getattr(hvd.elastic, "last_reset_timings", None)
RECOVERY = "recovery times (s)" if TIMINGS else "recovery times (s, from the reset callback)"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=14)
    parser.add_argument("--batch", type=int, default=32, help="per worker")
    parser.add_argument("--lr", type=float, default=0.02, help="per worker: times the world size")
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--commit-every", type=int, default=4)
    parser.add_argument("--step-delay-ms", type=int, default=0,
                        help="slows training down so a demo can act while it runs")
    parser.add_argument("--data", default=DIGITS)
    return parser.parse_args()


def load_digits(path):
    """(train_x, train_y), (test_x, test_y): every fifth row held out, as in digits_cnn.cc."""
    with gzip.open(path, "rt") as f:
        rows = np.loadtxt(f, delimiter=",", dtype=np.float32)
    x = torch.from_numpy(rows[:, :64] / 16.0).reshape(-1, 1, 8, 8)
    y = torch.from_numpy(rows[:, 64].astype(np.int64))
    held_out = torch.arange(len(y)) % 5 == 0
    train_x, test_x = x[~held_out], x[held_out]
    mean, std = train_x.mean(), train_x.std()
    return ((train_x - mean) / std, y[~held_out]), ((test_x - mean) / std, y[held_out])


def make_model():
    """conv 1->16, ReLU, conv 16->32, ReLU, max-pool 2, linear 512->64, ReLU, linear 64->10."""
    torch.manual_seed(7)  # every rank builds the same model, so the first sync changes nothing
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(512, 64), nn.ReLU(), nn.Linear(64, 10))


def log(line):
    print(f"train_digits: {line}", flush=True)


class Trainer:
    def __init__(self, args):
        self.args = args
        (self.train_x, self.train_y), (self.test_x, self.test_y) = load_digits(args.data)
        self.n = len(self.train_y)
        self.model = make_model()
        sgd = torch.optim.SGD(self.model.parameters(), lr=args.lr * hvd.size(),
                              momentum=args.momentum)
        self.optimizer = hvd.DistributedOptimizer(
            sgd, named_parameters=self.model.named_parameters())
        self.sampler = hvd.elastic.ElasticSampler(
            torch.utils.data.TensorDataset(self.train_x, self.train_y), shuffle=True, seed=42)
        # `trained` (this epoch: how many times each sample was trained) and `epoch_totals` (this
        # epoch's loss sum, correct count and count) are replaced, never changed in place: a
        # commit may keep a reference to them.
        self.state = hvd.elastic.TorchState(
            model=self.model, optimizer=self.optimizer, sampler=self.sampler, epoch=0, step=0,
            trained=torch.zeros(self.n, dtype=torch.int32),
            epoch_totals=torch.zeros(3, dtype=torch.float64))
        self.state.register_reset_callbacks([self.on_reset])
        self.exactly_once = True
        self.resets = 0
        self.reset_started = None
        self.recoveries = []

    def run(self):
        hvd.elastic.run(self.train)(self.state)
        if hvd.rank() == 0:
            self.summary()

    def train(self, state):
        self.log_event("training")
        while state.epoch < self.args.epochs:
            for batch in self.batches():
                stats = self.step(batch)
                state.epoch_totals = state.epoch_totals + stats
                state.step += 1
                if state.step % self.args.commit_every == 0:
                    state.commit()
                if state.step % 10 == 0 and hvd.rank() == 0:
                    log(f"epoch {state.epoch} step {state.step}: loss "
                        f"{stats[0] / max(stats[2], 1):.4f}, world size {hvd.size()}")
            state.commit()
            self.finish_epoch()
            state.epoch += 1
            self.sampler.set_epoch(state.epoch)
            state.commit()

    def batches(self):
        """This rank's unprocessed samples in batches, as many batches on every rank (ranks with
        fewer samples left end with empty batches), so no rank waits for a step that never comes."""
        mine = list(iter(self.sampler))
        longest = int(hvd.allgather(torch.tensor([len(mine)]), name="digits.lengths").max())
        steps = math.ceil(longest / self.args.batch)
        return [mine[i * self.args.batch:(i + 1) * self.args.batch] for i in range(steps)]

    def step(self, batch):
        """One step over every worker's batch; returns the global loss sum, correct, count."""
        ids = torch.tensor(batch, dtype=torch.int64)
        local = torch.zeros(3, dtype=torch.float64)
        self.optimizer.zero_grad()
        # An empty batch computes no gradient: the optimizer contributes zeros for it.
        if len(batch) > 0:
            x, y = self.train_x[ids], self.train_y[ids]
            logits = self.model(x)
            loss = F.cross_entropy(logits, y)
            loss.backward()
            local = torch.tensor([loss.item() * len(batch),
                                  (logits.argmax(1) == y).sum().item(), len(batch)],
                                 dtype=torch.float64)
        self.optimizer.step()  # the allreduce of every gradient, then the SGD update
        totals = hvd.allreduce(local, op=hvd.Sum, name="digits.stats")
        everyone = hvd.allgather(ids, name="digits.sample_ids")
        self.state.trained = self.state.trained + torch.bincount(
            everyone, minlength=self.n).to(torch.int32)
        self.sampler.record_indices(batch)
        if self.reset_started is not None:
            self.note_recovery()
        if self.args.step_delay_ms > 0:
            time.sleep(self.args.step_delay_ms / 1000)
        return totals

    def finish_epoch(self):
        if self.reset_started is not None:  # a world with no step to take: its first commit
            self.note_recovery()
        stats = self.state.epoch_totals
        self.state.epoch_totals = torch.zeros(3, dtype=torch.float64)
        once = int((self.state.trained == 1).sum())
        self.state.trained = torch.zeros(self.n, dtype=torch.int32)
        self.exactly_once = self.exactly_once and once == self.n
        if hvd.rank() == 0:
            lr = self.optimizer.param_groups[0]["lr"]
            log(f"epoch {self.state.epoch} done: loss {stats[0] / max(stats[2], 1):.4f}, "
                f"accuracy {stats[1] / max(stats[2], 1):.4f}, {once}/{self.n} samples trained "
                f"exactly once, lr {lr:.4f}, world size {hvd.size()}")

    def on_reset(self):
        """After a change of world: Horovod's rule, the learning rate grows with the world."""
        for group in self.optimizer.param_groups:
            group["lr"] = self.args.lr * hvd.size()
        self.resets += 1
        self.reset_started = time.monotonic()
        self.reset_cost = 0.0
        what = "reset into a new world"
        if TIMINGS is not None:  # the teardown, assignment and connect phases, in seconds
            t = TIMINGS()
            self.reset_cost = t.teardown + t.assignment + t.connect
            what = f"reset into round {t.round}"
        self.log_event(what)

    def note_recovery(self):
        """From the failure (or interrupt) being caught to the end of the new world's first step
        (or its first epoch end, if it had no step to take)."""
        self.recoveries.append(self.reset_cost + time.monotonic() - self.reset_started)
        self.reset_started = None

    def log_event(self, what):
        host = os.environ.get("COHORT_HOSTNAME", "localhost")
        log(f"{what}: rank {hvd.rank()} of {hvd.size()}, epoch {self.state.epoch}, step "
            f"{self.state.step}, resets {self.resets}, host {host}, pid {os.getpid()}")

    def summary(self):
        with torch.no_grad():
            predicted = self.model(self.test_x).argmax(1)
        accuracy = (predicted == self.test_y).double().mean().item()
        log(f"held-out accuracy {accuracy:.3f} ({len(self.test_y)} images never trained on)")
        recoveries = " ".join(f"{r:.3f}" for r in self.recoveries) or "none"
        log(f"summary: {self.state.epoch} epochs, world size {hvd.size()}, resets seen by this "
            f"worker {self.resets}, {RECOVERY}: {recoveries}; held-out accuracy "
            f"{accuracy:.3f}; every sample of every epoch trained exactly once: "
            f"{'yes' if self.exactly_once else 'no'}")


def main():
    args = parse_args()
    torch.set_num_threads(1)  # several workers share few cores
    hvd.init()
    Trainer(args).run()


if __name__ == "__main__":
    main()
