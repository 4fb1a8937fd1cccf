"""Computes one run's RESULT line from its log (bench/peers recovery workload): the lines
common.py prints (STEP, KILL, REMOVE, ACCOUNT), whoever printed them.

  kill:   recovery_s  = from KILL to the end of the first step that started after it (any size)
          full_size_s = from KILL to the end of the first step that started after it at full size
  shrink: a kill with no replacement (recovery/zero.sh): recovery_s as for kill, full_size_s = -
  remove: recovery_s  = from REMOVE to the end of the first step at one worker fewer
          full_size_s = - (nothing replaces a worker that left)
  lost, duplicated, samples: summed over epochs from the ACCOUNT lines (the final state's counts)

  analyze.py LOG --system S --trial T --np N --kind kill|shrink|remove --rc RC

Prints the RESULT line; when no figure can be computed, exits 1 with the reason on stderr.
Standard library only.
"""

import argparse
import re
import sys

# No word boundary before the kind: the lines of processes that share a log can interleave
# ("...recovery_0REMOVE t=... rank=1] Start quorum"); values are numbers.
LINE = re.compile(r"(STEP|KILL|REMOVE|ACCOUNT) ((?:[a-z0-9]+=-?[0-9.]+ ?)+)")
NEEDS = {"STEP": {"t0", "t", "world"}, "KILL": {"t"}, "REMOVE": {"t"},
         "ACCOUNT": {"samples", "lost", "duplicated"}}


def records(log):
    """{kind: [fields]} of the log's lines."""
    out = {"STEP": [], "KILL": [], "REMOVE": [], "ACCOUNT": []}
    with open(log, errors="replace") as f:
        for line in f:
            m = LINE.search(line)
            fields = dict(kv.split("=", 1) for kv in m.group(2).split()) if m else {}
            if m and NEEDS[m.group(1)] <= fields.keys():  # a line cut by another is skipped
                out[m.group(1)].append(fields)
    return out


def last_error(log):
    """': <the log's last line that names an error>', shortened, or ''. A launcher's own ERROR
    line (Horovod's driver: 'blacklisted slots count == 4 -> stop running') comes first."""
    with open(log, errors="replace") as f:
        lines = [line.strip() for line in f if re.search(r"error|Error|ERROR", line)]
    lines = [line for line in lines if "ERROR:" in line] or lines
    return f": {lines[-1][:200]}" if lines else ""


def first_after(steps, t, world=None):
    """The end time of the first step that started after t (at world size `world`, if given)."""
    ends = [float(s["t"]) for s in steps
            if float(s["t0"]) > t and (world is None or int(s["world"]) == world)]
    return min(ends) if ends else None


def figures(rec, args):
    """(recovery_s, full_size_s) or raises ValueError with the reason."""
    event = rec["REMOVE" if args.kind == "remove" else "KILL"]
    if not event:
        raise ValueError(f"no {args.kind} happened (no {args.kind.upper()} line)")
    t = float(event[0]["t"])
    if args.kind == "shrink":
        next_step, full = first_after(rec["STEP"], t, args.np - 1), None
    elif args.kind == "kill":
        next_step, full = first_after(rec["STEP"], t), first_after(rec["STEP"], t, args.np)
    else:
        next_step, full = first_after(rec["STEP"], t, args.np - 1), None
    if next_step is None:
        raise ValueError(f"no step completed after the {args.kind}")
    if args.kind == "kill" and full is None:
        raise ValueError("no step at full size after the kill: no replacement joined")
    return next_step - t, (full - t if full is not None else None)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("log")
    for name in ("--system", "--kind"):
        p.add_argument(name, required=True)
    for name in ("--trial", "--np", "--rc"):
        p.add_argument(name, type=int, required=True)
    args = p.parse_args()
    rec = records(args.log)
    try:
        if args.rc != 0:
            raise ValueError(f"the job exited with status {args.rc}")
        recovery, full = figures(rec, args)
        if not rec["ACCOUNT"]:
            raise ValueError("no ACCOUNT lines: the job did not finish its training")
    except ValueError as e:
        sys.exit(f"{e}{last_error(args.log)}")
    lost = sum(int(a["lost"]) for a in rec["ACCOUNT"])
    dup = sum(int(a["duplicated"]) for a in rec["ACCOUNT"])
    samples = sum(int(a["samples"]) for a in rec["ACCOUNT"])
    full_text = f"{full:.3f}" if full is not None else "-"
    print(f"RESULT workload=recovery system={args.system} trial={args.trial} np={args.np} "
          f"kind={args.kind} recovery_s={recovery:.3f} full_size_s={full_text} lost={lost} "
          f"duplicated={dup} samples={samples}")


if __name__ == "__main__":
    main()
