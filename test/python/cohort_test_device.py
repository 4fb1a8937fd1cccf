"""The device the Python tests put their tensors on: COHORT_TEST_DEVICE=cpu (the default) or cuda.

With cuda, conftest.py makes this rank's GPU (local rank modulo the GPUs present, so ranks share
one GPU when there are more ranks than GPUs) torch's current and default device: the tests'
factories (torch.arange, torch.ones, ...) then make CUDA tensors, and torch.testing.assert_close
checks each result's device and dtype as well as its values. What a test must build on the host
(tensors from a CPU torch.Generator) goes through ``host_randn``. ``unusable()`` says why CUDA
cannot be used here (the whole run then skips), or None.
"""

import os

import torch

NAME = os.environ.get("COHORT_TEST_DEVICE", "cpu")
CHOICES = ("cpu", "cuda")


def is_cuda():
    return NAME == "cuda"


def unusable():
    """Why this run's device cannot be used, or None."""
    if NAME not in CHOICES:
        return f"COHORT_TEST_DEVICE={NAME!r} is invalid: must be one of {', '.join(CHOICES)}"
    if NAME == "cpu":
        return None
    if not torch.cuda.is_available():
        return (f"no usable CUDA GPU (torch {torch.__version__}, built for CUDA "
                f"{torch.version.cuda}, sees {torch.cuda.device_count()} devices)")
    if not hasattr(torch, "set_default_device"):
        return f"torch {torch.__version__} has no torch.set_default_device (torch 2.0 or newer)"
    return None


def device(local_rank=None):
    """This rank's device: cpu, or cuda:<local rank modulo the GPUs present>; the local rank is
    cohortrun's COHORT_LOCAL_RANK unless given (hvd.local_rank() once initialized)."""
    if not is_cuda():
        return torch.device("cpu")
    if local_rank is None:
        local_rank = int(os.environ.get("COHORT_LOCAL_RANK", "0"))
    return torch.device("cuda", local_rank % torch.cuda.device_count())


def host_randn(*shape, generator):
    """``torch.randn`` from a CPU generator, then on this run's device (a CPU generator cannot
    fill a CUDA tensor)."""
    return torch.randn(*shape, generator=generator, device="cpu").to(device())
