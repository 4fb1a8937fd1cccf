"""torchrun's recovery program for recovery/common.py: DDP over gloo, restarted as a whole by
torchrun --max-restarts (restart-all), resuming from a user checkpoint (torch.save every
--commit-every steps to WORK/checkpoint.pt, renamed into place) as torchrun's docs recommend. The
committed history is the checkpoint the run resumed from plus the final state: counts live in the
checkpoint. The same DistributedSampler order after a restart (same world, same seed), so the
resumed epoch skips the batches the checkpoint covers.
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
    raw = models.build("digits")
    model = DistributedDataParallel(raw)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * world, momentum=0.9)
    path = os.path.join(args.work, "checkpoint.pt")
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
            if step % args.commit_every == 0 and rank == 0:
                save(path, raw, optimizer, epoch, i + 1, step, counts)
            common.step_done(args, t0, epoch, step, world, rank)
        epoch, start = epoch + 1, 0
    if rank == 0:
        common.account(counts)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
