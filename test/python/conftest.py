"""pytest setup for the Python tests: the device their tensors go on (cohort_test_device.py).

COHORT_TEST_DEVICE=cuda makes this rank's GPU torch's default device before any test runs, or
ends the run with exit status 77 and one line saying why when no GPU is usable (ctest's
SKIP_RETURN_CODE). Tests marked ``cpu_only`` (host memory by nature) are skipped on CUDA runs;
tests marked ``multi_rank`` (about peers) are skipped in a world of one (-np 1: the GPU runs'
NCCL world, since NCCL takes one rank per GPU).
"""

import os

import pytest
import torch

import cohort_test_device


def pytest_configure(config):
    config.addinivalue_line("markers", "cpu_only(reason): the test is about host tensors only")
    config.addinivalue_line("markers", "multi_rank: the test needs two ranks or more")
    reason = cohort_test_device.unusable()
    if reason is not None:
        if cohort_test_device.NAME in cohort_test_device.CHOICES:
            pytest.exit(f"SKIP: {reason}", returncode=77)
        pytest.exit(reason, returncode=2)
    if cohort_test_device.is_cuda():
        device = cohort_test_device.device()
        torch.cuda.set_device(device)
        torch.set_default_device(device)


def pytest_report_header(config):
    return f"cohort test device: {cohort_test_device.device()}"


def pytest_collection_modifyitems(config, items):
    size = int(os.environ.get("COHORT_SIZE", "1"))  # cohortrun's; none: a world of one
    for item in items:
        marker = item.get_closest_marker("cpu_only")
        if marker is not None and cohort_test_device.is_cuda():
            why = marker.args[0] if marker.args else "host tensors only"
            item.add_marker(pytest.mark.skip(reason=f"CPU only: {why}"))
        if item.get_closest_marker("multi_rank") is not None and size < 2:
            item.add_marker(pytest.mark.skip(reason=f"needs 2 ranks or more, the world has {size}"))
