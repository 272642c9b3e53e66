#!/usr/bin/env bash
# Issues 29's and 38's many-core figures in one go: the script to run where a many-core machine (16 cores) is lent,
# about 6-8 minutes there, the issues' headline figures first (a lent machine's time is short). Every line it prints
# names the machine, the commit and the load, so the output can go into docs/benchmarks.md as it is:
#   bash bench/many_core.sh | tee many-core.txt
# First, issue 38's wall over ideal at 64-way with a 200 ms server, the arena beside the floor (bench/peers.py
# --levels slow, 1.29 MB rounds, 3 repeats; its table's wall / ideal row), with cores to spare for the stub. Then
# (bench/overhead.py --scale, crop + search + answer against a stub that answers in 1 s, served by 8 processes so
# that it is not the bottleneck): wall time over ideal and driver CPU per finished episode at 256-,
# 1024- and 4096-way for the asyncio backend and 4, 8 and 12 worker processes (the targets: <= 10 % over ideal at
# 1024-way with 8 workers, more workers never slower than fewer, driver CPU <= 0.1 ms per episode); the same at
# 1024-way with lognormal reply times (sigma 0.5); then worker start-up (bench/worker_startup.py, target <= 1 s).
# WAYS, WORKERS, WAVES and SERVERS override the defaults (e.g. a short check on a small machine:
# WAYS=64 WORKERS=0,2 WAVES=1 SERVERS=2 bash bench/many_core.sh). On a machine that cannot install (no package
# index), PY names a Python that already has the arena's run-time packages (`make install` is then skipped), and
# COMMIT the commit measured where the copy has no .git.
set -euo pipefail
cd "$(dirname "$0")/.."
WAYS=${WAYS:-1024 256,4096}  # one bench/overhead.py run per group: 1024-way, the target, first
WORKERS=${WORKERS:-0,4,8,12}
WAVES=${WAVES:-3}
SERVERS=${SERVERS:-8}
if [ -z "${PY:-}" ]; then
  log=$(mktemp)
  make -s install >"$log" 2>&1 || { cat "$log"; exit 1; }
  rm -f "$log"
  PY=.venv/bin/python
fi
commit=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
echo "# $(nproc) cores ($(uname -m)), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), commit" \
     "$commit, $(date -u +%Y-%m-%dT%H:%M:%SZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
$PY bench/peers.py --harness arena floor --tasks 64 --images 1 --size 1316x728 --noise 1 --levels slow --repeats 3
for ways in $WAYS; do
  $PY bench/overhead.py --scale --delays 1 --ways "$ways" --workers "$WORKERS" --waves "$WAVES" --servers "$SERVERS"
done
$PY bench/overhead.py --scale --delays 1 --spread 0.5 --ways "${WAYS_SPREAD:-1024}" --workers "$WORKERS" \
    --waves "$WAVES" --servers "$SERVERS"
workers=${WORKERS#0,}
$PY bench/worker_startup.py --workers "$workers" --repeats 3
echo "# done, load $(cut -d' ' -f1-3 /proc/loadavg)"
