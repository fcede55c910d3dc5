#!/usr/bin/env python3
"""check_history.py: judge a qualify write history (JSON Lines) as a set of writes.

    check_history.py HISTORY

Each line is one write: {"seq": N, "outcome": "acknowledged" | "failed" | "unknown" |
"not_attempted", "read": "present" | "absent" | "unread"}. The history is valid when every
acknowledged write was read back present and nothing never attempted is present; a failed or
unknown write may be present or absent (it may or may not have happened). Prints one line and
exits 0 (valid) or 1 (invalid); 2 when the file cannot be read.
"""
import json
import sys

try:
    with open(sys.argv[1]) as f:
        writes = [json.loads(line) for line in f if line.strip()]
except (OSError, IndexError, ValueError) as e:
    print("cannot read the history: %s" % e)
    sys.exit(2)

count = lambda **kw: sum(all(w.get(k) == v for k, v in kw.items()) for w in writes)
acknowledged = count(outcome="acknowledged")
lost = [w["seq"] for w in writes if w["outcome"] == "acknowledged" and w["read"] == "absent"]
unread = count(outcome="acknowledged", read="unread")
invented = [w["seq"] for w in writes if w["outcome"] == "not_attempted"]
landed = sum(w["outcome"] in ("failed", "unknown") and w["read"] == "present" for w in writes)
if lost or invented:
    print("%d of %d acknowledged writes lost (first %s), %d never written but present"
          % (len(lost), acknowledged, lost[:5], len(invented)))
    sys.exit(1)
print("all %d acknowledged writes present (%d not read); %d failed or unknown writes landed"
      % (acknowledged - unread, unread, landed))
