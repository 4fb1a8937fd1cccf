"""A collective that only some ranks submit (a "stray", as Horovod's duplicate-name tests leave on
ranks above 0 when the first submission has already completed) never holds up the job: the other
collectives go on past it, the stall timeout fails it naming the tensor and the ranks, shutdown()
fails it at once naming it and returns without waiting for the shutdown timeout, and init()
afterwards starts clean. Run on every rank under cohortrun (-np 2 and -np 3).
"""

import os
import shutil
import tempfile
import time

import pytest
import torch

import cohort.torch as hvd


def test_a_second_submission_after_completion_is_a_new_collective():
    # Horovod's duplicate-name tests, rank > 0's part: every other rank has submitted 'dup', so
    # this rank's first submission completes it; the second starts a new collective. Waiting on
    # the first (rather than racing it) makes the test deterministic.
    hvd.init()
    t = torch.ones(3)
    if hvd.rank() != 0:
        hvd.barrier()
    first = hvd.allreduce_async(t, name="dup", op=hvd.Sum)
    if hvd.rank() == 0:
        with pytest.raises(ValueError, match="already in flight"):
            hvd.allreduce_async(t, name="dup", op=hvd.Sum)  # the others have not submitted yet
        hvd.barrier()
    torch.testing.assert_close(hvd.synchronize(first), torch.full((3,), float(hvd.size())))
    last = hvd.rank() == hvd.size() - 1
    if last:
        stray = hvd.allreduce_async(t, name="dup", op=hvd.Sum)  # no rank joins it
    hvd.barrier()  # the stray holds nothing up
    start = time.monotonic()
    hvd.shutdown()
    assert time.monotonic() - start < 10  # far below COHORT_SHUTDOWN_TIMEOUT_SECONDS (60)
    if last:
        with pytest.raises(hvd.InternalError,
                           match=r"'dup' cannot complete: rank \d+ has shut down and will never "
                                 r"submit it"):
            hvd.synchronize(stray)


def test_init_after_a_stray_starts_clean():
    hvd.init()
    total = hvd.allreduce(torch.ones(2), name="dup", op=hvd.Sum)  # the stray's name, reused
    torch.testing.assert_close(total, torch.full((2,), float(hvd.size())))
    hvd.shutdown()


def test_the_stall_timeout_fails_a_stray_naming_it(monkeypatch):
    monkeypatch.setenv("COHORT_STALL_SHUTDOWN_TIME_SECONDS", "1")
    hvd.init()
    # The other ranks wait outside Cohort (for a file) until the stray has failed: a collective
    # they waited in meanwhile would stall too.
    failed = os.path.join(hvd.broadcast_object(tempfile.mkdtemp() if hvd.rank() == 0 else None),
                          "stray failed")
    last = hvd.size() - 1
    if hvd.rank() == last:
        stray = hvd.allreduce_async(torch.ones(2), name="stray", op=hvd.Sum)
        others = ", ".join(str(r) for r in range(last))
        with pytest.raises(hvd.StallError,
                           match=rf"'stray' stalled: submitted by ranks \[{last}\] but "
                                 rf"not by ranks \[{others}\]"):
            hvd.synchronize(stray)
        with open(failed, "w", encoding="utf-8"):
            pass
    deadline = time.monotonic() + 30
    while not os.path.exists(failed):
        assert time.monotonic() < deadline, "the stray did not fail within 30 s"
        time.sleep(0.01)
    total = hvd.allreduce(torch.ones(2), name="stray", op=hvd.Sum)  # the name is free again
    torch.testing.assert_close(total, torch.full((2,), float(hvd.size())))
    if hvd.rank() == 0:
        shutil.rmtree(os.path.dirname(failed))
    hvd.shutdown()
