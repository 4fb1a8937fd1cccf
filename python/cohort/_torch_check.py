"""Refuses a torch that cohort.torch does not support, before ``cohort._C`` is loaded.

The extension links no libtorch: it takes tensors as (data pointer, shape, dtype, device) and
hands results back through DLPack, so one build serves every torch from ``SUPPORTED_FROM`` on,
whatever its version or C++ ABI. Older ones lack what the Python modules use (DLPack of every
dtype, torch.Tensor._base); this check names the torch found and what is supported.
"""

import re

from cohort import _build_info

SUPPORTED_FROM = (1, 13)


def release(version):
    """(major, minor) of a torch version string such as "2.15.0+cu132" or "1.13.0a0", or None."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else None


def unsupported(version):
    """The reason the torch of ``version`` cannot run cohort.torch, or None when it can."""
    found = release(version)
    if found is None:
        return f"its version {version!r} is not one cohort can read"
    if found < SUPPORTED_FROM:
        return f"it is older than {SUPPORTED_FROM[0]}.{SUPPORTED_FROM[1]}"
    return None


def check(torch):
    """Raises ImportError unless ``torch`` (the imported module) is one cohort.torch supports."""
    reason = unsupported(torch.__version__)
    if reason is None:
        return
    raise ImportError(
        f"cohort {_build_info.COHORT_VERSION} supports torch {SUPPORTED_FROM[0]}."
        f"{SUPPORTED_FROM[1]} and every later release, but this environment imports torch "
        f"{torch.__version__} ({torch.__file__}): {reason}. Install a supported torch "
        "(pip install --upgrade torch); cohort itself needs no reinstall.")
