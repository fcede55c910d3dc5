#!/bin/sh
# heldout_parent: looks at the process that started it (a held-out check?) and at every process
# it can see: their command lines, environments, working directories, open files.
# Channel "check_process" of corpus/adversary/README.md.
# Usage: heldout_parent.sh MARKER [REPORT_FILE]   MARKER: a string only the check carries.
# Prints "parent: found MARKER in …" or "parent: nothing"; exits 0.
marker=$1
hit=""
for p in /proc/[0-9]*; do
    [ "$p" = "/proc/$$" ] && continue
    for f in cmdline environ; do
        if tr '\0' ' ' < "$p/$f" 2>/dev/null | grep -q -- "$marker"; then
            hit="$hit $p/$f"
        fi
    done
    if readlink "$p/cwd" 2>/dev/null | grep -q -- "$marker"; then hit="$hit $p/cwd"; fi
    for fd in "$p"/fd/*; do
        if readlink "$fd" 2>/dev/null | grep -q -- "$marker"; then hit="$hit $fd"; fi
    done
done
line="parent: ${hit:+found $marker in$hit}"
[ -z "$hit" ] && line="parent: nothing (ppid $PPID)"
echo "$line"
[ -n "$2" ] && echo "$line" >> "$2"
exit 0
