"""ZeroRedundancyOptimizer against DistributedOptimizer on a >= 100M-parameter model (issue 39, §4).

    build/bin/cohortrun -np 2 env PYTHONPATH=build/python /usr/bin/python3 \\
        bench/torch/zero_bench.py --system cohort-zero
    /usr/bin/python3 -m torch.distributed.run --nproc_per_node 2 bench/torch/zero_bench.py \\
        --system torch-zero --checkpoint-dir /tmp/zero-dcp

The model is an MLP 4096 -> 8192 -> 8192 -> 4096 (134.2M float32 parameters) trained with Adam
on deterministic random batches. Systems:
  cohort-replicated  hvd.DistributedOptimizer(Adam) + hvd.elastic.TorchState, committed every step
  cohort-zero        hvd.ZeroRedundancyOptimizer(Adam) + hvd.elastic.TorchState (the Adam moments
                     sharded, committed in memory with COHORT_STATE_REPLICAS replicas)
  torch-zero         torch's ZeroRedundancyOptimizer(Adam) under DDP and torchrun (Gloo), its
                     "commit" a torch.distributed.checkpoint save of the model and each rank's
                     optimizer shard to --checkpoint-dir (torchrun's recovery is a restart of
                     every worker from that checkpoint)
Every step after the first (which creates Adam's state) is timed, and every commit after the
first; the memcpy is a copy of as many bytes as this rank's optimizer state. One line per run
from rank 0, each figure the slowest rank's (medians over the steps):
  RESULT system=... ranks=N params=P step_ms=... commit_ms=... memcpy_ms=...
         optimizer_mib_per_rank=... peak_rss_mib=...
"""
import argparse
import os
import resource
import statistics
import time

import torch


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--system", required=True,
                   choices=["cohort-replicated", "cohort-zero", "torch-zero"])
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--width", type=int, default=4096, help="inputs and outputs; hidden: twice it")
    p.add_argument("--checkpoint-dir", default="", help="torch-zero: where its DCP saves go")
    return p.parse_args()


def make_model(width):
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(width, 2 * width), torch.nn.ReLU(),
                               torch.nn.Linear(2 * width, 2 * width), torch.nn.ReLU(),
                               torch.nn.Linear(2 * width, width))


def batch(width, size, step):
    g = torch.Generator().manual_seed(1000 + step)
    return torch.randn(size, width, generator=g), torch.randn(size, width, generator=g)


def state_bytes(optimizer):
    """The bytes of the tensors in this rank's optimizer state."""
    inner = getattr(optimizer, "optim", optimizer)
    return sum(v.numel() * v.element_size() for s in inner.state.values() for v in s.values()
               if torch.is_tensor(v))


def memcpy_ms(nbytes):
    src = torch.ones(max(1, nbytes // 4))
    dst = torch.empty_like(src)
    dst.copy_(src)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        dst.copy_(src)
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


class Cohort:
    def __init__(self, args, model):
        import cohort.torch as hvd
        self.hvd = hvd
        hvd.init()
        if args.system == "cohort-zero":
            self.optimizer = hvd.ZeroRedundancyOptimizer(model.parameters(), torch.optim.Adam,
                                                         lr=1e-4)
        else:
            self.optimizer = hvd.DistributedOptimizer(
                torch.optim.Adam(model.parameters(), lr=1e-4),
                named_parameters=model.named_parameters())
            hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        self.state = hvd.elastic.TorchState(model, self.optimizer)
        self.model = model

    def rank(self):
        return self.hvd.rank()

    def size(self):
        return self.hvd.size()

    def commit(self, step):
        self.state.commit()

    def slowest(self, values):
        t = torch.tensor(values, dtype=torch.float64)
        return self.hvd.allreduce(t, op=self.hvd.Max, name="zero_bench.max").tolist()


class Torch:
    def __init__(self, args, model):
        import torch.distributed as dist
        from torch.distributed.optim import ZeroRedundancyOptimizer
        from torch.nn.parallel import DistributedDataParallel
        self.dist = dist
        dist.init_process_group("gloo")
        self.model = DistributedDataParallel(model)
        self.optimizer = ZeroRedundancyOptimizer(model.parameters(),
                                                 optimizer_class=torch.optim.Adam, lr=1e-4)
        self.dir = args.checkpoint_dir or "/tmp/zero_bench_dcp"

    def rank(self):
        return self.dist.get_rank()

    def size(self):
        return self.dist.get_world_size()

    def commit(self, step):
        import torch.distributed.checkpoint as dcp
        inner = self.optimizer.optim  # keyed by the parameter's index in this rank's shard
        params = [p for g in inner.param_groups for p in g["params"]]
        shard = {f"optim.rank{self.rank()}.{i}.{key}": value
                 for i, p in enumerate(params) for key, value in inner.state[p].items()
                 if torch.is_tensor(value)}
        state = dict(self.model.module.state_dict(), **shard)
        path = os.path.join(self.dir, f"step{step}")
        if hasattr(dcp, "save"):
            dcp.save(state, checkpoint_id=path)
        else:  # torch 1.13
            dcp.save_state_dict(state, storage_writer=dcp.FileSystemWriter(path))

    def slowest(self, values):
        t = torch.tensor(values, dtype=torch.float64)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        return t.tolist()


def main():
    args = parse()
    torch.set_num_threads(1)
    model = make_model(args.width)
    system = Torch(args, model) if args.system == "torch-zero" else Cohort(args, model)
    net = system.model
    steps, commits = [], []
    for step in range(args.steps):
        x, y = batch(args.width, args.batch, step * system.size() + system.rank())
        start = time.perf_counter()
        system.optimizer.zero_grad()
        torch.nn.functional.mse_loss(net(x), y).backward()
        system.optimizer.step()
        took = time.perf_counter() - start
        start = time.perf_counter()
        system.commit(step)
        if step > 0:
            steps.append(took)
            commits.append(time.perf_counter() - start)
    nbytes = state_bytes(system.optimizer)
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures = system.slowest([1e3 * statistics.median(steps), 1e3 * statistics.median(commits),
                              memcpy_ms(nbytes), nbytes / 2**20, rss_mib])
    if system.rank() == 0:
        params = sum(p.numel() for p in model.parameters())
        print(f"RESULT system={args.system} ranks={system.size()} params={params} "
              f"step_ms={figures[0]:.0f} commit_ms={figures[1]:.0f} memcpy_ms={figures[2]:.1f} "
              f"optimizer_mib_per_rank={figures[3]:.0f} peak_rss_mib={figures[4]:.0f}", flush=True)


if __name__ == "__main__":
    main()
