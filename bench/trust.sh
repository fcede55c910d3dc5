#!/bin/sh
# Cost of trust: `qualify run` unsigned vs signed (Ed25519, P-256) on a 2-cell spec, and the
# time of `verify` and `gate --key` on the signed receipt. Prints medians of N runs side by side;
# not a pass/fail test. Usage: bench/trust.sh [path/to/qualify] [N]
set -eu
Q=${1:-target/release/qualify}
N=${2:-5}
Q=$(cd "$(dirname "$Q")" && pwd)/$(basename "$Q")
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
cd "$D"
printf '#!/bin/sh\necho "n=$1"\n' > art && chmod +x art
cat > qualify.toml <<'TOML'
[artifact]
name = "art"
command = "./art {n}"

[claim]
level = "trial"

[functional]
command = "./art 0"

[[axis]]
name = "n"
kind = "workload"
values = [1, 2]
TOML
"$Q" keygen --out ed >/dev/null
"$Q" keygen --out ec --algorithm p256 >/dev/null
median() { # command... → median wall ms over N runs
    for _ in $(seq "$N"); do
        s=$(date +%s%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s%N)
        echo $(( (e - s) / 1000000 ))
    done | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
u=$(median "$Q" run --no-ledger --receipt u.json)
s=$(median "$Q" run --no-ledger --receipt s.json --sign ed)
p=$(median "$Q" run --no-ledger --receipt p.json --sign ec)
v=$(median "$Q" verify s.json --key ed.pub --artifact art)
g=$(median "$Q" gate s.json --claim trial --key ed.pub)
vp=$(median "$Q" verify p.json --key ec.pub --artifact art)
echo "qualify run (ms, median of $N):  unsigned $u   --sign ed25519 $s   --sign p256 $p"
echo "verify --artifact (ms):          ed25519 $v   p256 $vp"
echo "gate --key (ms):                 $g"
