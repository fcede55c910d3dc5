#!/bin/sh
# daemon: leaves a process behind: double fork and setsid, so that the cell's main process
# exits 0 while its daemon lives on. Row "daemon" of corpus/adversary/README.md.
# Usage: daemon.sh [SECONDS]   (the daemon sleeps SECONDS, default 300)
( setsid sh -c "sleep ${1:-300}" </dev/null >/dev/null 2>&1 & )
echo started
exit 0
