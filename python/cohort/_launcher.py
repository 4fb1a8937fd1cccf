"""The ``cohortrun`` command of a pip-installed Cohort: replaces itself with the launcher binary.

The wheel holds the binary in cohort/bin; this entry point exec's it (same process, so signals
sent to ``cohortrun`` reach the launcher directly, and its exit status is the command's).
"""

import os
import sys


def binary():
    """The path of the cohortrun binary installed with this package."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "cohortrun")


def main():
    path = binary()
    if not os.access(path, os.X_OK):
        sys.exit(f"cohortrun: {path} is missing or not executable; this cohort package was not "
                 "installed by pip (the CMake route installs cohortrun in <prefix>/bin)")
    os.execv(path, [path] + sys.argv[1:])
