"""The program logic every system's commit/checkpoint harness shares (bench/peers, issue 28).

The state is what a system must keep to recover a rank: a model of models.py (mlp25m, mlp500m) and
its SGD momentum optimizer after one step (so every momentum buffer exists). Each harness
(commit_<system>.py) joins its job and hands over a Method: `commit()` (what the system does per
step, or at a checkpoint, to keep that state) and `restore()` (how the state comes back: a restore
in place, a load from the file, a transfer from a healthy replica), and a barrier. This module
times, in every process, against a memcpy of the same bytes (each state tensor `copy_`'d into one
touched buffer the size of the largest: memory speed with no page faults) and a clone (the same
tensors cloned into fresh memory, as a deep copy does), all ranks at once, --commits times; it
checks that every restore brings back exactly what was committed (a wrong state is an error, not a
figure) and prints one RESULT line per rank with the medians. Works with torch >= 1.13.
"""

import statistics
import time

import torch

import harness
import models


class Method:
    """A system's way to keep and recover the state. commit/restore time what the system does;
    role is "all" (every rank commits and restores), or for a transfer "source"/"receiver"/"idle":
    a source commits (makes its state available), a receiver restores (fetches it)."""

    def __init__(self, commit, restore, role="all", how="", extra=None, warm_up=True):
        self.commit, self.restore, self.role, self.how = commit, restore, role, how
        self.warm_up = warm_up  # an untimed first commit (that allocates what later ones reuse)
        self.extra = extra or {}  # more ways to commit, each timed after commit under its name


def parse_args(argv=None):
    p = harness.parser("commit/checkpoint cost of the recovery state (bench/peers)")
    p.add_argument("--model", default="mlp25m", choices=["mlp25m", "mlp500m"])
    p.add_argument("--commits", type=int, default=5, help="timed commits (and restores)")
    p.add_argument("--no-clone", dest="clone", action="store_false",
                   help="skip the clone (fresh memory) timing: it costs seconds on mlp500m")
    p.add_argument("--fsync", action="store_true",
                   help="torch's checkpoint only: also time torch.save with an fsync")
    return p.parse_args(argv)


def prepare(name):
    """The model and its SGD momentum optimizer after one step (every momentum buffer exists)."""
    model = models.build(name)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for p in model.parameters():  # the step's gradients: a forward and backward pass of mlp500m
        p.grad = torch.full_like(p, 1e-3)  # takes 20 s on 1.13's CPU kernels, and changes nothing
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)  # gradients are not state: no grads kept around
    return model, optimizer


def state_tensors(model, optimizer):
    """The tensors of the state: parameters and buffers, and every momentum buffer."""
    tensors = list(model.state_dict().values())
    for p in model.parameters():
        tensors.append(optimizer.state[p]["momentum_buffer"])
    return tensors


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def memcpy(tensors, scratch):
    """Copies each tensor into the front of scratch (one touched buffer the size of the largest)."""
    for t in tensors:
        scratch[: t.numel()].view(t.shape).copy_(t)


def clone(tensors):
    """Clones each tensor into fresh memory, dropping each copy at once (memory stays bounded)."""
    for t in tensors:
        t.clone()


def mark(tensors, value):
    """Writes value into the first and last element of every state tensor."""
    with torch.no_grad():
        for t in tensors:
            flat = t.view(-1)
            flat[0] = value
            flat[-1] = value


def check_marks(tensors, value, what):
    """Every state tensor must hold value at both ends: a wrong state is an error, not a figure."""
    for i, t in enumerate(tensors):
        flat = t.view(-1)
        if flat[0].item() != value or flat[-1].item() != value:
            raise RuntimeError(f"{what}: state tensor {i} holds {flat[0].item()}, "
                               f"{flat[-1].item()} at its ends, expected {value}")


def fingerprint(tensors):
    return [t.sum(dtype=torch.float64).item() for t in tensors]


def commit_name(method):
    """A source's commit only offers its live state to a receiver (a send): not a per-step copy."""
    return "send" if method.role == "source" else "commit"


def one_round(i, state, method, barrier, scratch, full_check, with_clone):
    """One timed round: memcpy, clone, commit of marked state, spoil, restore, check. state()
    gives the state tensors (a restore may replace the optimizer's momentum buffers)."""
    times, tensors = {}, state()
    barrier()
    times["memcpy"] = timed(lambda: memcpy(tensors, scratch))
    if with_clone:
        barrier()
        times["clone"] = timed(lambda: clone(tensors))
    value = float(i + 1)
    if method.role != "receiver":
        mark(tensors, value)
    committed = fingerprint(tensors) if full_check and method.role == "all" else None
    barrier()
    if method.role in ("all", "source"):
        times[commit_name(method)] = timed(method.commit)
        for name, commit in method.extra.items():
            barrier()
            times[name] = timed(commit)
    barrier()
    if method.role in ("all", "receiver"):
        mark(tensors, -1.0)  # the live state goes bad, as after a failure (or a fresh replica)
        times["restore"] = timed(method.restore)
        tensors = state()
        check_marks(tensors, value, f"after restore {i + 1}")
        if committed is not None and fingerprint(tensors) != committed:
            raise RuntimeError(f"after restore {i + 1}: the state differs from the committed one")
    barrier()
    return times


def run(args, rank, world, method, barrier):
    """Times method on args.model; prints this rank's RESULT line (medians over the rounds)."""
    model, optimizer = prepare(args.model)
    tensors = state_tensors(model, optimizer)
    nbytes = sum(t.numel() * t.element_size() for t in tensors)
    scratch = torch.zeros(max(t.numel() for t in tensors))
    method = method(model, optimizer)
    first = None
    if method.role in ("all", "source") and method.warm_up:
        first = timed(method.commit)  # allocates what later commits reuse: shown apart
    rounds = [one_round(i, lambda: state_tensors(model, optimizer), method, barrier, scratch,
                        i == 0, args.clone) for i in range(args.commits)]
    med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    figures = dict(np=world, rank=rank, model=args.model, how=method.how, role=method.role,
                   params=models.parameters(model), state_bytes=nbytes, commits=args.commits,
                   threads=torch.get_num_threads())
    figures.update({f"{k}_s": f"{v:.6f}" for k, v in med.items()})
    if first is not None:
        figures[f"first_{commit_name(method)}_s"] = f"{first:.6f}"
    harness.result("commit", args, **figures)
