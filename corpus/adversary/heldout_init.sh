#!/bin/sh
# heldout_init: reads qualify's command line through the cell's init (a fork of qualify: its
# /proc/1/cmdline was qualify's, `--holdout DIR` included). Channel "qualify_command_line" of
# corpus/adversary/README.md.
# Usage: heldout_init.sh [REPORT_FILE]   prints "init: <its command line>" or "init: nothing".
cmd=$(tr '\0' ' ' < /proc/1/cmdline 2>/dev/null | tr -s ' ')
case "$cmd" in
    *[!\ ]*) line="init: $cmd" ;;
    *) line="init: nothing" ;;
esac
echo "$line"
[ -n "$1" ] && echo "$line" >> "$1"
exit 0
