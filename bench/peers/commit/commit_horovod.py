"""Horovod's elastic state (horovod.torch.elastic.TorchState) for commit/common.py; run by
horovodrun --gloo. The same program as commit_cohort.py, on Horovod's module: its commit() deep
copies both state dicts (copy.deepcopy) and broadcasts the host-update check; restore() is
load_state_dict of the copies."""

import horovod.torch

import commit_cohort

if __name__ == "__main__":
    commit_cohort.main(horovod.torch)
