"""Cohort: elastic distributed training in the style of Horovod.

Use the framework package: ``import cohort.torch as hvd``.
"""

# torch first: cohort.torch needs it, and a torch it does not support is refused (with the reason)
# before anything loads the extension. The extension itself links no libtorch.
import torch as _torch  # noqa: F401

from cohort import _torch_check

_torch_check.check(_torch)

from cohort._errors import *  # noqa: F401,F403 (every error class, see _errors.__all__)

from cohort._build_info import COHORT_VERSION as __version__  # noqa: E402
