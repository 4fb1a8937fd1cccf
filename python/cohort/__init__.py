"""Cohort: elastic distributed training in the style of Horovod.

Use the framework package: ``import cohort.torch as hvd``.
"""

# torch first: the extension links libtorch_python, whose symbols torch's import loads.
import torch as _torch  # noqa: F401

from cohort._errors import *  # noqa: F401,F403 (every error class, see _errors.__all__)

__version__ = "0.1.0"
