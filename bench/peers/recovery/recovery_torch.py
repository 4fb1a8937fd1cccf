"""torchrun's recovery program for recovery/common.py: DDP over gloo, restarted as a whole by
torchrun --max-restarts (restart-all), resuming from a user checkpoint (torch.save every
--commit-every steps to WORK/checkpoint.pt, renamed into place) as torchrun's docs recommend. The
committed history is the checkpoint the run resumed from plus the final state: counts live in the
checkpoint. The same DistributedSampler order after a restart (same world, same seed), so the
resumed epoch skips the batches the checkpoint covers.

With --optimizer zero the optimizer is torch's ZeroRedundancyOptimizer over Adam (each rank steps
and holds the moments of its parameter shard) and the checkpoint is a torch.distributed.checkpoint
(DCP) save to WORK/dcp-<step>: the model from rank 0's copy, each rank's moments under its own
keys, and the position and counts; the step of the newest complete save is in WORK/dcp.latest
(renamed into place once every rank's save returned). A restart (same world: one node) loads it.
"""

import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DistributedSampler, TensorDataset

import common
import models


def load(path, model, optimizer, args):
    """(epoch, step in epoch, global step, counts) of the checkpoint, or the start."""
    if not os.path.exists(path):
        return 0, 0, 0, common.new_counts(args)
    ck = torch.load(path)
    model.load_state_dict(ck["model"])
    optimizer.load_state_dict(ck["optimizer"])
    return ck["epoch"], ck["in_epoch"], ck["step"], ck["counts"]


def save(path, model, optimizer, epoch, in_epoch, step, counts):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                "in_epoch": in_epoch, "step": step, "counts": counts}, path + ".tmp")
    os.replace(path + ".tmp", path)


class Dcp:
    """The checkpoint of --optimizer zero: DCP of the model, this rank's Adam moments and the
    training position."""

    def __init__(self, work, model, optimizer):
        import torch.distributed.checkpoint as dcp
        self.dcp, self.work, self.model, self.optimizer = dcp, work, model, optimizer

    def _shard(self):
        """This rank's Adam state, its tensors made if the first step has not run yet (a load
        fills tensors in place), keyed by the rank and the parameter's index in its shard."""
        inner = self.optimizer.optim
        out = {}
        for i, p in enumerate(q for g in inner.param_groups for q in g["params"]):
            s = inner.state[p]
            if not s:
                s.update(step=torch.zeros(()), exp_avg=torch.zeros_like(p),
                         exp_avg_sq=torch.zeros_like(p))
            for key, value in s.items():
                out[f"optim.rank{dist.get_rank()}.{i}.{key}"] = value
        return out

    def _state(self, position):
        return dict(self.model.state_dict(), **self._shard(), **position)

    def save(self, epoch, in_epoch, step, counts):
        position = {"position": torch.tensor([epoch, in_epoch, step]), "counts": counts}
        path = os.path.join(self.work, f"dcp-{step}")
        if hasattr(self.dcp, "save"):
            self.dcp.save(self._state(position), checkpoint_id=path)
        else:  # torch 1.13
            self.dcp.save_state_dict(self._state(position),
                                     storage_writer=self.dcp.FileSystemWriter(path))
        dist.barrier()
        if dist.get_rank() == 0:
            latest = os.path.join(self.work, "dcp.latest")
            with open(latest + ".tmp", "w") as f:
                f.write(str(step))
            os.replace(latest + ".tmp", latest)

    def load(self, args):
        latest = os.path.join(self.work, "dcp.latest")
        if not os.path.exists(latest):
            return 0, 0, 0, common.new_counts(args)
        with open(latest) as f:
            path = os.path.join(self.work, f"dcp-{f.read().strip()}")
        position = {"position": torch.zeros(3, dtype=torch.int64),
                    "counts": common.new_counts(args)}
        state = self._state(position)
        if hasattr(self.dcp, "load"):
            self.dcp.load(state, checkpoint_id=path)
        else:  # torch 1.13
            self.dcp.load_state_dict(state, storage_reader=self.dcp.FileSystemReader(path))
        self.model.load_state_dict({k: state[k] for k in self.model.state_dict()})
        epoch, in_epoch, step = state["position"].tolist()
        return epoch, in_epoch, step, state["counts"]


def init():
    """The process group, its keys under this attempt's prefix: with the keys of the attempt
    before still in torchrun's store, a restarted rank could read a dead rank's address (gloo's
    connectFullMesh then fails with 'Connection refused', or hangs)."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    agent_store = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world,
                          is_master=rank == 0 and not agent_store, timeout=timedelta(seconds=60))
    prefix = f"attempt{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}"
    dist.init_process_group("gloo", store=dist.PrefixStore(prefix, store), rank=rank,
                            world_size=world, timeout=timedelta(seconds=60))


def main():
    args = common.parse_args()
    init()
    rank, world = dist.get_rank(), dist.get_world_size()
    x, y = common.data(args)
    raw = models.build(args.model)
    model = DistributedDataParallel(raw)
    path = os.path.join(args.work, "checkpoint.pt")
    if args.optimizer == "zero":
        from torch.distributed.optim import ZeroRedundancyOptimizer
        optimizer = ZeroRedundancyOptimizer(raw.parameters(), optimizer_class=torch.optim.Adam,
                                            lr=common.learning_rate(args, world))
        checkpoint = Dcp(args.work, raw, optimizer)
        epoch, start, step, counts = checkpoint.load(args)
    else:
        optimizer = common.local_optimizer(args, model.parameters(), world)
        checkpoint = None
        epoch, start, step, counts = load(path, raw, optimizer, args)
    sampler = DistributedSampler(TensorDataset(x, y), num_replicas=world, rank=rank, shuffle=True,
                                 seed=42)
    while epoch < args.epochs:
        sampler.set_epoch(epoch)
        mine = list(iter(sampler))
        batches = [mine[i:i + args.batch] for i in range(0, len(mine), args.batch)]
        for i in range(start, len(batches)):
            t0 = time.time()
            if args.kind == "kill" and common.event_due(args, step, rank):
                common.kill_self(rank)
            ids = torch.tensor(batches[i], dtype=torch.int64)
            optimizer.zero_grad()
            common.forward_backward(model, x, y, ids)
            optimizer.step()
            reduced = common.step_counts(args, ids)
            dist.all_reduce(reduced)
            counts = common.add_counts(counts, epoch, reduced)
            step += 1
            if step % args.commit_every == 0:
                if checkpoint is not None:  # DCP: every rank saves its part
                    checkpoint.save(epoch, i + 1, step, counts)
                elif rank == 0:
                    save(path, raw, optimizer, epoch, i + 1, step, counts)
            common.step_done(args, t0, epoch, step, world, rank)
        epoch, start = epoch + 1, 0
    if rank == 0:
        common.account(counts)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
