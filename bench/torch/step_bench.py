"""Time per training step: cohort.torch's DistributedOptimizer against PyTorch's
DistributedDataParallel (Gloo backend), same model, same batch, same launcher.

Run under cohortrun, one mode per launch (bench/torch/step_bench.sh runs them all and
alternates them):

    cohortrun -np 2 /usr/bin/python3 bench/torch/step_bench.py --mode cohort --model mlp25m
    BENCH_PORT=29500 cohortrun -np 2 /usr/bin/python3 bench/torch/step_bench.py --mode ddp ...

Modes:
  cohort  hvd.DistributedOptimizer: forward, backward, then one grouped allreduce of every
          gradient (with --num-groups N: N groups, each sent from the backward hooks as soon as
          its gradients are ready) (timed as "sync_in_step": it includes waiting for the slowest rank's
          backward pass) and the optimizer step. After the timed steps it times
          optimizer.synchronize() alone with the ranks in lockstep ("lockstep_sync") and
          hvd.grouped_allreduce_ of the same gradient tensors ("raw"): their difference is what
          the optimizer wrapper adds per step.
  ddp     torch.nn.parallel.DistributedDataParallel over torch.distributed's Gloo backend
          (bucketed allreduces overlapped with the backward pass), then the optimizer step.

Each rank times every step; the figure is the median step time of the slowest rank.
The inputs are fixed random tensors: this measures step time, not learning.
"""
import argparse
import os
import statistics
import time

import torch
import torch.nn as nn


def digits_cnn():
    """The main job's network (examples/torch/digits_cnn.cc): 8x8 digits, 10 classes."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(512, 64), nn.ReLU(), nn.Linear(64, 10))


def mlp25m():
    """A stack of linear layers with 25.2 million parameters (about 100 MB of float32)."""
    return nn.Sequential(
        nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
        nn.Linear(4096, 1024), nn.ReLU(), nn.Linear(1024, 10))


MODELS = {"digits": (digits_cnn, (1, 8, 8)), "mlp25m": (mlp25m, (1024,))}


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=["cohort", "ddp"], required=True)
    p.add_argument("--model", choices=sorted(MODELS), required=True)
    p.add_argument("--batch", type=int, default=32, help="samples per rank per step")
    p.add_argument("--steps", type=int, default=30, help="timed steps")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    p.add_argument("--num-groups", type=int, default=0,
                   help="cohort: DistributedOptimizer's num_groups (0: one group at step(); "
                        "N: N groups sent from the backward hooks, overlapping the backward pass)")
    return p.parse_args()


def batch_for(args, rank):
    g = torch.Generator().manual_seed(1000 + rank)
    shape = MODELS[args.model][1]
    x = torch.randn((args.batch,) + shape, generator=g)
    y = torch.randint(0, 10, (args.batch,), generator=g)
    return x, y


def median_ms(samples):
    return 1e3 * statistics.median(samples)


def run_cohort(args):
    import cohort.torch as hvd
    hvd.init()
    torch.manual_seed(0)
    model = MODELS[args.model][0]()
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
                                   named_parameters=model.named_parameters(),
                                   num_groups=args.num_groups)
    x, y = batch_for(args, hvd.rank())
    loss_fn = nn.CrossEntropyLoss()
    steps, syncs = [], []
    for i in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        t1 = time.perf_counter()
        opt.synchronize()
        t2 = time.perf_counter()
        with opt.skip_synchronize():
            opt.step()
        t3 = time.perf_counter()
        if i >= args.warmup:
            steps.append(t3 - t0)
            syncs.append(t2 - t1)
    # The wrapper's own cost: synchronize() alone, ranks in lockstep (no backward pass before it,
    # whose length differs between ranks), against a grouped allreduce of the same tensors.
    grads = [p.grad for _, p in sorted(model.named_parameters())]
    wrapped, raws = [], []
    for i in range(args.warmup + args.steps):
        opt.zero_grad(set_to_none=False)  # keeps the gradient tensors; re-arms synchronize()
        hvd.barrier()
        t0 = time.perf_counter()
        opt.synchronize()
        t1 = time.perf_counter()
        hvd.grouped_allreduce_(grads, op=hvd.Average, name="raw.grads")
        t2 = time.perf_counter()
        if i >= args.warmup:
            wrapped.append(t1 - t0)
            raws.append(t2 - t1)
    figures = torch.tensor([median_ms(steps), median_ms(syncs), median_ms(wrapped),
                            median_ms(raws)], dtype=torch.float64)
    worst = hvd.allreduce(figures, op=hvd.Max, name="bench.figures")
    if hvd.rank() == 0:
        report(args, hvd.size(), worst[0], f"groups={args.num_groups} sync_in_step_ms={worst[1]:.3f} lockstep_sync_ms="
               f"{worst[2]:.3f} raw_grouped_allreduce_ms={worst[3]:.3f} wrapper_overhead_ms="
               f"{worst[2] - worst[3]:.3f}")
    hvd.shutdown()


def run_ddp(args):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    rank, size = int(os.environ["COHORT_RANK"]), int(os.environ["COHORT_SIZE"])
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{os.environ['BENCH_PORT']}",
                            rank=rank, world_size=size)
    torch.manual_seed(0)
    model = DistributedDataParallel(MODELS[args.model][0]())
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = batch_for(args, rank)
    loss_fn = nn.CrossEntropyLoss()
    steps = []
    for i in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss_fn(model(x), y).backward()  # DDP's allreduces run during the backward pass
        opt.step()
        if i >= args.warmup:
            steps.append(time.perf_counter() - t0)
    worst = torch.tensor([median_ms(steps)], dtype=torch.float64)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)
    if rank == 0:
        report(args, size, worst[0], "")
    dist.destroy_process_group()


def report(args, size, step_ms, extra):
    params = sum(p.numel() for p in MODELS[args.model][0]().parameters())
    print(f"RESULT model={args.model} params={params} mode={args.mode} ranks={size} "
          f"batch={args.batch} steps={args.steps} step_ms={step_ms:.3f} {extra}".rstrip(),
          flush=True)


if __name__ == "__main__":
    torch.set_num_threads(1)  # one core per rank: 2 ranks on this 2-core machine
    a = parse()
    run_cohort(a) if a.mode == "cohort" else run_ddp(a)
