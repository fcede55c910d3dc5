#!/bin/sh
# heldout_files: reads a held-out check by its path (learnt some other way).
# Channel "files" of corpus/adversary/README.md.
# Usage: heldout_files.sh PATH [REPORT_FILE]   prints "files: read N bytes" or "files: blocked".
if [ -s "$1" ] && n=$(wc -c < "$1" 2>/dev/null); then
    line="files: read $n bytes"
else
    line="files: blocked"
fi
echo "$line"
[ -n "$2" ] && echo "$line" >> "$2"
exit 0
