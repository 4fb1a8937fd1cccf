"""The program logic every system's recovery program shares (bench/peers, issue 28, workloads 3
and 4): the data set, the step, the chosen event (a worker SIGKILLs itself, or one leaves cleanly)
and the lines analyze.py computes the figures from.

Every program trains the digits CNN (models.py; another with --model) on `--samples` synthetic
indexed samples, batch `--batch` per rank, `--epochs` epochs, sleeping `--step-delay-ms` after each
step, with SGD and momentum (--optimizer sgd), Adam (adam) or Adam sharded over the ranks (zero:
each system's ZeroRedundancyOptimizer; recovery/zero.sh), and prints:

  STEP t0=<start> t=<end> epoch=E step=S world=W rank=R   each completed (committed) step
  KILL t=<time> rank=R                                     right before os.kill(getpid(), SIGKILL)
  REMOVE t=<time> rank=R                                   when the clean removal is asked for
  ACCOUNT epoch=E samples=N lost=L duplicated=D            at the end, from the final state

Times are time.time(). The event happens once per run (an O_EXCL marker file), so a replacement
that reaches the same step does not repeat it. Sample accounting lives in the training state: a
float32 tensor counts[epoch, index], added to with the allreduce of each step's indices in the
same step as the weights, so it is committed, restored and checkpointed with them; the final
state's counts are the committed history. Works with any Python 3 and torch >= 1.13.
"""

import math
import os
import signal
import time

import torch
import torch.nn.functional as F

import harness
import models


def parse_args(argv=None):
    p = harness.parser("recovery time and sample accounting (bench/peers)")
    p.add_argument("--kind", choices=["kill", "remove"], default="kill")
    p.add_argument("--job-size", type=int, required=True, help="the full job size")
    p.add_argument("--samples", type=int, default=4096)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--step-delay-ms", type=float, default=30)
    p.add_argument("--commit-every", type=int, default=4, help="steps between commits/checkpoints")
    p.add_argument("--event-rank", type=int, default=1, help="the rank that is killed or leaves")
    p.add_argument("--event-step", type=int, default=0,
                   help="the global step of the event (default: 40%% into the second epoch)")
    p.add_argument("--model", default="digits", choices=sorted(models.MODELS))
    p.add_argument("--optimizer", default="sgd", choices=["sgd", "adam", "zero"])
    p.add_argument("--work", required=True, help="a folder of the run: marker, checkpoint, hosts")
    args = p.parse_args(argv)
    if not args.event_step:
        args.event_step = steps_per_epoch(args, args.job_size) * 14 // 10
    return args


def steps_per_epoch(args, world):
    return math.ceil(args.samples / (args.batch * world))


def data(args):
    """The synthetic data set: args.samples inputs of the model's shape and their labels, the same
    everywhere."""
    return models.batch(args.model, args.samples, 0)


def learning_rate(args, world):
    """SGD's rate grows with the world (the gradients are averaged); Adam's does not."""
    return 0.01 * world if args.optimizer == "sgd" else 1e-4


def local_optimizer(args, params, world):
    """The optimizer of --optimizer sgd or adam over params (zero is each system's own class)."""
    if args.optimizer == "sgd":
        return torch.optim.SGD(params, lr=learning_rate(args, world), momentum=0.9)
    return torch.optim.Adam(params, lr=learning_rate(args, world))


def new_counts(args):
    return torch.zeros(args.epochs, args.samples, dtype=torch.float32)


def step_counts(args, ids):
    """This rank's contribution to counts[epoch] for one step (the allreduce of it is added)."""
    return torch.zeros(args.samples).index_add_(0, ids, torch.ones(len(ids)))


def add_counts(counts, epoch, reduced):
    """counts with the step's reduced counts added to row epoch: a new tensor, never changed in
    place (a commit may keep a reference to the old one)."""
    counts = counts.clone()
    counts[epoch] += reduced
    return counts


def forward_backward(model, x, y, ids):
    """Loss and gradients of the batch ids; an empty batch gives zero gradients (every rank takes
    part in every step's collectives)."""
    if len(ids) == 0:
        (model(x[:1]).sum() * 0).backward()
        return
    F.cross_entropy(model(x[ids]), y[ids]).backward()


def event_due(args, step, rank, actor=None):
    """True once per run: at global step args.event_step on rank actor (default args.event_rank)."""
    if step != args.event_step or rank != (args.event_rank if actor is None else actor):
        return False
    try:
        os.close(os.open(os.path.join(args.work, "event.done"), os.O_CREAT | os.O_EXCL))
        return True
    except FileExistsError:
        return False


def kill_self(rank):
    print(f"KILL t={time.time():.6f} rank={rank}", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def announce_removal(rank):
    print(f"REMOVE t={time.time():.6f} rank={rank}", flush=True)


def step_done(args, t0, epoch, step, world, rank):
    """The STEP line of a completed step, then the step delay."""
    print(f"STEP t0={t0:.6f} t={time.time():.6f} epoch={epoch} step={step} world={world} "
          f"rank={rank}", flush=True)
    if args.step_delay_ms > 0:
        time.sleep(args.step_delay_ms / 1000)


def account(counts):
    """The ACCOUNT lines of the final state's counts."""
    for epoch, row in enumerate(counts):
        print(f"ACCOUNT epoch={epoch} samples={len(row)} lost={int((row == 0).sum())} "
              f"duplicated={int((row > 1).sum())}", flush=True)
