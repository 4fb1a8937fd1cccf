"""Horovod's recovery program (horovod.torch's elastic API: hvd.elastic.run, TorchState,
ElasticSampler), run by horovodrun elastic with a host discovery script (recovery/workload.sh).
The same program as recovery_cohort.py, on Horovod's module."""

import horovod.torch

import recovery_cohort

if __name__ == "__main__":
    recovery_cohort.main(horovod.torch)
