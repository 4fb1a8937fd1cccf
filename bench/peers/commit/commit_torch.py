"""torchrun's recovery state for commit/common.py: the user checkpoint PyTorch's docs recommend
(torchrun restarts every worker, which reloads its own checkpoint; DDP tutorial: rank 0 saves,
every rank loads). commit() is torch.save of {"model": model.state_dict(), "optimizer":
optimizer.state_dict()} by rank 0 to a file in /tmp, then a barrier (every rank waits for it);
commit_fsync the same with flush + os.fsync before the barrier; restore() is torch.load on every
rank and load_state_dict of both. The file is read back from the page cache (just written)."""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist

import common


def checkpointer(path, rank):
    """Method factory: rank 0 saves to path (fsync or not), every rank loads."""
    def method(model, optimizer):
        def save(fsync):
            if rank == 0:
                with open(path, "wb") as f:
                    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, f)
                    if fsync:
                        f.flush()
                        os.fsync(f.fileno())
            dist.barrier()

        def load():
            saved = torch.load(path, map_location="cpu")
            model.load_state_dict(saved["model"])
            optimizer.load_state_dict(saved["optimizer"])

        return common.Method(lambda: save(False), load, how="torch.save",
                             extra={"commit_fsync": lambda: save(True)})
    return method


def main():
    args = common.parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=600))  # bounded: a 3.8 GB save fits
    rank, world = dist.get_rank(), dist.get_world_size()
    where = [tempfile.mkstemp(prefix="cohort-peers-commit-", suffix=".pt")[1] if rank == 0 else None]
    dist.broadcast_object_list(where, src=0)
    try:  # run() ends with a barrier: every rank has loaded the file before rank 0 removes it
        common.run(args, rank, world, checkpointer(where[0], rank), dist.barrier)
    finally:
        if rank == 0:
            os.remove(where[0])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
