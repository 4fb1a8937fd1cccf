"""torchrun's recovery state for commit/common.py: the user checkpoint PyTorch's docs recommend
(torchrun restarts every worker, which reloads its own checkpoint; DDP tutorial: rank 0 saves,
every rank loads). commit() is torch.save of {"model": model.state_dict(), "optimizer":
optimizer.state_dict()} by rank 0 to a file in /tmp, then a barrier (every rank waits for it);
with --fsync also commit_fsync, the same with flush + os.fsync before the barrier; restore() is
torch.load on every rank and load_state_dict of both. The file is read back from the page cache
(just written)."""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist

import common


def checkpointer(path, rank, fsync):
    """Method factory: rank 0 saves to path (with fsync: again, fsync'd), every rank loads."""
    def method(model, optimizer):
        def save(sync):
            if rank == 0:
                with open(path, "wb") as f:
                    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
                    torch.save(state, f)
                    if sync:
                        f.flush()
                        os.fsync(f.fileno())
            dist.barrier()

        def load():
            saved = torch.load(path, map_location="cpu")
            model.load_state_dict(saved["model"])
            optimizer.load_state_dict(saved["optimizer"])

        extra = {"commit_fsync": lambda: save(True)} if fsync else {}
        return common.Method(lambda: save(False), load, how="torch.save", extra=extra,
                             warm_up=False)  # every save writes a new file: nothing to warm
    return method


def main():
    args = common.parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=600))  # bounded; a 3.8 GB save fits
    rank, world = dist.get_rank(), dist.get_world_size()
    where = [None]
    if rank == 0:
        fd, where[0] = tempfile.mkstemp(prefix="cohort-peers-commit-", suffix=".pt")
        os.close(fd)
    dist.broadcast_object_list(where, src=0)
    try:  # run() ends with a barrier: every rank has loaded the file before rank 0 removes it
        common.run(args, rank, world, checkpointer(where[0], rank, args.fsync), dist.barrier)
    finally:
        if rank == 0:
            os.remove(where[0])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
