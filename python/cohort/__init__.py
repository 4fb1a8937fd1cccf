"""Cohort: elastic distributed training in the style of Horovod.

Use the framework package: ``import cohort.torch as hvd``.
"""

# torch first: the extension links libtorch_python, whose symbols torch's import loads.
import torch as _torch  # noqa: F401

# The torch this build was compiled against, checked before anything loads the extension.
from cohort import _torch_check

_torch_check.check(_torch)

from cohort._errors import *  # noqa: F401,F403 (every error class, see _errors.__all__)

from cohort._build_info import COHORT_VERSION as __version__  # noqa: E402
