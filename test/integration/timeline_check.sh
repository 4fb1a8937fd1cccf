#!/usr/bin/env bash
# COHORT_TIMELINE: a finished job leaves strict JSON with negotiation and execution events; a job
# whose writer (rank 0) is SIGKILLed mid-run leaves only whole events (Chrome's trace format lets
# the closing bracket be missing).
set -euo pipefail
cohortrun=$1 checker=$2 killer=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

COHORT_TIMELINE=$tmp/full.json "$cohortrun" -np 2 "$checker" >"$tmp/out" 2>&1 \
  || { cat "$tmp/out"; echo "FAIL: the checked job failed"; exit 1; }
python3 - "$tmp/full.json" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))          # strict JSON
names = {e.get("name") for e in events}
rows = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
assert "NEGOTIATE_allreduce" in names and "allreduce" in names, names
assert "rank 1 ready" in names and "rank 0 ready" in names, names
assert "order/a" in rows and "in place" in rows, rows
begins = sum(1 for e in events if e.get("ph") == "B")
ends = sum(1 for e in events if e.get("ph") == "E")
assert begins == ends, (begins, ends)
print(f"timeline: {len(events)} events, {len(rows)} tensors, balanced")
PY

# Rank 0 writes the timeline and kills itself at step 20.
COHORT_TIMELINE=$tmp/killed.json "$cohortrun" -np 2 "$killer" 0 20 >/dev/null 2>&1 || true
python3 - "$tmp/killed.json" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
assert text.startswith("[") and text.endswith(",\n"), repr(text[-40:])
events = json.loads(text.rstrip().rstrip(",") + "]")  # every event written is whole
assert any(e.get("name") == "NEGOTIATE_allreduce" for e in events)
print(f"timeline of a killed writer: {len(events)} whole events")
PY
