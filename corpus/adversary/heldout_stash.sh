#!/bin/sh
# heldout_stash: keeps what it learnt for a later cell: prints the stash a run before it left in
# the workdir, then leaves one. Channel "later_cells" of corpus/adversary/README.md.
# Usage: heldout_stash.sh TEXT   prints "stash: <what an earlier run left>" or "stash: none".
if [ -f .stash ]; then echo "stash: $(cat .stash)"; else echo "stash: none"; fi
echo "$1" > .stash
exit 0
