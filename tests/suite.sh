#!/usr/bin/env bash
# The whole suite (`make test`), in two passes:
#   1. every test not marked `alone`, in parallel pytest-xdist workers (FACEOFF_TEST_WORKERS,
#      default 3: most tests wait on lanes and sockets, so a third worker fills the two cores),
#      an idle worker stealing queued tests from a busy one (the e2e campaigns take minutes
#      each: handed out in fixed chunks they ended up queued behind one worker);
#   2. the `alone` tests one at a time on a quiet host: a real engine pinned to a core, a
#      client's stamps checked against a server's writes.
# Arguments go to both passes (paths, -k, -x). A pass that collects nothing is fine when the
# other ran tests; both empty is a failure, said out loud. The last line counts both passes.
set -uo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
workers=${FACEOFF_TEST_WORKERS:-3}
export FACEOFF_TEST_REPORT=${FACEOFF_TEST_REPORT:-$(mktemp -t faceoff-tests.XXXXXX)}

FACEOFF_TEST_PHASE=parallel "$python" -m pytest -n "$workers" --dist worksteal -m "not alone" "$@"
parallel=$?
FACEOFF_TEST_PHASE=alone "$python" -m pytest -m alone "$@"
alone=$?

"$python" - "$FACEOFF_TEST_REPORT" <<'EOF'
import json, sys
counts = {}
for line in open(sys.argv[1], encoding="utf-8"):
    if line.startswith("{"):
        for key, n in json.loads(line)["counts"].items():
            counts[key] = counts.get(key, 0) + n
failed = counts.get("failed", 0) + counts.get("error", 0)
line = f"suite: {counts.get('passed', 0)} passed, {failed} failed, {counts.get('skipped', 0)} skipped"
print(line)
with open(sys.argv[1], "a", encoding="utf-8") as report:
    report.write(line + "\n")
EOF

if ((parallel == 5 && alone == 5)); then
  echo "make test: no tests were collected; failing"
  exit 5
fi
for rc in "$parallel" "$alone"; do
  ((rc == 0 || rc == 5)) || exit "$rc"
done
exit 0
