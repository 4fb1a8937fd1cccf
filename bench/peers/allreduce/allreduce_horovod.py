"""Horovod's allreduce (horovod.torch) for allreduce/common.py; run by horovodrun --gloo.
The same program as allreduce_cohort.py, on Horovod's module."""

import horovod.torch

import allreduce_cohort

if __name__ == "__main__":
    allreduce_cohort.main(horovod.torch)
