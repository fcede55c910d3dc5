#!/bin/sh
# heldout_steal: issue 31's held-out row in one script: started by a held-out check, it finds the
# check's script through /proc/$PPID/cmdline, copies it into the workdir, and prints it from a
# later cell (so the receipt, the ledger and the reports carry it). Also prints any stolen copy
# it finds in DIR (a path shared between cells). Row "held-out" of corpus/adversary/README.md.
# Usage: heldout_steal.sh [DIR]   exits 0.
for f in stolen-check "${1:-.}/stolen-check"; do
    [ -f "$f" ] && { echo "stolen:"; cat "$f"; }
done
args=$(tr '\0' '\n' < /proc/$PPID/cmdline 2>/dev/null)
for a in $args; do
    if [ -f "$a" ] && [ "${a%.sh}" != "$a" ]; then
        cp "$a" stolen-check 2>/dev/null
        [ -n "$1" ] && cp "$a" "$1/stolen-check" 2>/dev/null
    fi
done
exit 0
