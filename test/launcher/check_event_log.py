#!/usr/bin/env python3
"""Checks a cohortrun --event-log file against docs/operations.md's table of events.

Every line must be one JSON object with "time" (UTC, milliseconds, "Z"), "job" and "event"
(and "node" in agent mode), an event the table lists, and only fields the table lists for it
(in backquotes in its second column). Times must not go backwards within the file.

Usage: check_event_log.py LOG DOC [EVENT...]: also requires each EVENT at least once.
Prints the events in order, one per line, and exits 1 naming every problem.
"""
import json
import re
import sys

COMMON = {"time", "job", "event", "node"}
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def documented_events(doc):
    events = {}
    in_table = False
    with open(doc, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("|"):
                in_table = False
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] == "Event":
                in_table = True
                continue
            if in_table and cells[0].startswith("`"):
                name = cells[0].strip("`")
                events[name] = set(re.findall(r"`([a-z_]+)`", cells[1]))
    return events


def main():
    log, doc, required = sys.argv[1], sys.argv[2], sys.argv[3:]
    events = documented_events(doc)
    if not events:
        sys.exit(f"{doc}: no | Event | table")
    problems, seen, last_time = [], [], ""
    with open(log, encoding="utf-8") as f:
        for n, text in enumerate(f, 1):
            where = f"{log}:{n}"
            try:
                line = json.loads(text)
            except json.JSONDecodeError as e:
                problems.append(f"{where}: not JSON: {e}")
                continue
            if not isinstance(line, dict):
                problems.append(f"{where}: not an object")
                continue
            for field in ("time", "job", "event"):
                if field not in line:
                    problems.append(f"{where}: no '{field}'")
            event = line.get("event")
            if event not in events:
                problems.append(f"{where}: event '{event}' is not in {doc}")
                continue
            if not TIME.match(str(line.get("time", ""))):
                problems.append(f"{where}: time '{line.get('time')}' is not UTC with milliseconds")
            elif line["time"] < last_time:
                problems.append(f"{where}: time goes backwards")
            else:
                last_time = line["time"]
            for field in sorted(set(line) - COMMON - events[event]):
                problems.append(f"{where}: field '{field}' of '{event}' is not in {doc}")
            seen.append(event)
            print(event)
    for event in required:
        if event not in seen:
            problems.append(f"{log}: no '{event}' event")
    for p in problems:
        print(p, file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
