"""Horovod's training step (horovod.torch DistributedOptimizer at its defaults) for
step/common.py; run by horovodrun --gloo. The same program as step_cohort.py, on Horovod's module."""

import horovod.torch

import step_cohort

if __name__ == "__main__":
    step_cohort.main(horovod.torch, {})
