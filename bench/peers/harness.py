"""What every workload's per-system program shares (bench/peers, issue 28): the arguments run.sh
passes to all of them, the RESULT line they print, and reading the launcher's environment.
run.sh puts bench/peers on PYTHONPATH; a workload's programs import their siblings directly
(Python puts a script's own folder first on sys.path). Works with any Python 3.
"""

import argparse
import os
import sys


def parser(description):
    """An argument parser with the arguments run.sh passes to every program."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--system", required=True, help="name printed in RESULT lines")
    p.add_argument("--trial", type=int, default=1)
    return p


def result(workload, args, **figures):
    """Prints one RESULT line: the workload, system and trial, then figures as key=value."""
    pairs = " ".join(f"{k}={v}" for k, v in figures.items())
    # One write of the whole line: print() writes the text and the newline apart, and the ranks
    # share the launcher's output, so another rank's line could land between them.
    sys.stdout.write(f"RESULT workload={workload} system={args.system} trial={args.trial} {pairs}\n")
    sys.stdout.flush()


def env_int(*names):
    """The first of the environment variables names that is set, as an int."""
    for name in names:
        if name in os.environ:
            return int(os.environ[name])
    raise RuntimeError(f"none of {', '.join(names)} is set: start this program with bench/peers/run.sh")
