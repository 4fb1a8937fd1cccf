"""The training loop every system's step harness shares (bench/peers, issue 28, workload 1).

Each harness (step_<system>.py) only joins its job and hands over a System: how it prepares a
model and an SGD optimizer for data-parallel training (its own wrapper, the way its docs say),
an in-place sum allreduce and a barrier. Models, batches, warm-up, the timed steps, the check that
every rank ends with identical parameters and the RESULT lines are the same for all. Works with
any Python 3 and torch >= 1.13. ``--device cuda`` puts the model and the batches on the rank's GPU
(local rank modulo the GPUs present; bench/gpu/torch_step.sh), timed up to the GPU's completion.
"""

import hashlib
import os
import time
from dataclasses import dataclass

import torch

import harness
import models

torch.set_num_threads(1)  # the same for every system, before any work: 2 cores, up to 4 ranks


@dataclass
class Setting:
    """Per-rank batch, untimed warm-up steps and timed steps of one model."""
    batch: int
    warmup: int
    steps: int


# Batches chosen so that the slowest system's step (Debian's torch 1.13 multiplies with reference
# BLAS, 5-15x slower than torch 2.15) at 4 ranks on 2 cores stays within seconds, and the full run
# within about 10 minutes; the step counts follow the step time.
SETTINGS = {"digits": Setting(32, 5, 30), "mlp25m": Setting(8, 1, 5), "tf50m": Setting(1, 1, 2)}


def parse_args(argv=None):
    p = harness.parser("training step time (bench/peers)")
    p.add_argument("--models", default=",".join(SETTINGS), help="comma-separated, of: "
                   + ", ".join(SETTINGS))
    p.add_argument("--warmup", type=int, help="untimed steps per model (default: per model)")
    p.add_argument("--steps", type=int, help="timed steps per model (default: per model)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="where the model and batches live (cuda: the local rank's GPU)")
    args = p.parse_args(argv)
    args.models = args.models.split(",")
    for name in args.models:
        if name not in SETTINGS:
            p.error(f"unknown model '{name}' (known: {', '.join(SETTINGS)})")
    return args


def device_of(args):
    """The rank's device: cpu, or the GPU of its local rank (cohortrun's or torchrun's)."""
    if args.device == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise RuntimeError("--device cuda: torch sees no usable CUDA GPU")
    local = int(os.environ.get("COHORT_LOCAL_RANK", os.environ.get("LOCAL_RANK", "0")))
    device = torch.device("cuda", local % torch.cuda.device_count())
    torch.cuda.set_device(device)
    return device


def finish(device):
    """Waits for the device's queued work (nothing to wait for on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def setting(args, name):
    s = SETTINGS[name]
    return Setting(s.batch, s.warmup if args.warmup is None else args.warmup,
                   s.steps if args.steps is None else args.steps)


def sgd(model):
    """The optimizer of every system: SGD, lr 0.01, momentum 0.9."""
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def digest(model):
    """sha256 of every parameter's bytes, as 4 integers below 2**24 in a float64 tensor (exact
    in a sum over a few ranks)."""
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().cpu().contiguous().view(-1).numpy().tobytes())
    d = h.digest()
    return torch.tensor([int.from_bytes(d[i:i + 3], "big") for i in range(0, 12, 3)],
                        dtype=torch.float64)


def check_identical(system, name, model):
    """Every rank's parameters must be bitwise identical: the sum of the digests over the ranks
    is world times this rank's digest on every rank only if all digests are equal."""
    mine = digest(model)
    total = mine.clone()
    system.sum_(total)
    if not torch.equal(total, mine * system.world):
        raise RuntimeError(f"{name}: rank {system.rank}'s parameters differ from another rank's after "
                           f"training (digest {mine.tolist()}, sum over {system.world} ranks "
                           f"{total.tolist()})")
    print(f"step: {name}: parameters identical on all {system.world} ranks", flush=True)


def train_step(module, optimizer, x, y):
    optimizer.zero_grad()
    torch.nn.functional.cross_entropy(module(x), y).backward()
    optimizer.step()


def run_model(args, system, name):
    """Warm-up, then the timed steps of one model; prints this rank's RESULT line."""
    s = setting(args, name)
    device = device_of(args)
    model = models.build(name).to(device)
    module, optimizer = system.prepare(name, model, sgd(model))
    total = s.warmup + s.steps
    # Each rank its own data; generated before the loop so that only training is timed.
    batches = [models.batch(name, s.batch, i * system.world + system.rank) for i in range(total)]
    batches = [(x.to(device), y.to(device)) for x, y in batches]
    for x, y in batches[:s.warmup]:
        train_step(module, optimizer, x, y)
        system.check_step(name)
    finish(device)
    system.barrier()
    start, cpu = time.perf_counter(), time.process_time()
    for x, y in batches[s.warmup:]:
        train_step(module, optimizer, x, y)
        system.check_step(name)
    finish(device)
    ms = (time.perf_counter() - start) / s.steps * 1e3
    cpu_ms = (time.process_time() - cpu) / s.steps * 1e3  # every thread of this process
    check_identical(system, name, model)
    harness.result("step", args, np=system.world, rank=system.rank, model=name,
                   params=models.parameters(model), batch=s.batch, steps=s.steps, ms=f"{ms:.2f}",
                   cpu_ms=f"{cpu_ms:.2f}", device=device.type)


def run(args, system):
    """Every model in turn."""
    for name in args.models:
        run_model(args, system, name)
