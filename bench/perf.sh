#!/usr/bin/env bash
# Benchmark for `qualify run` with [performance] (not a test): runs the four programs of known
# complexity in examples/perf/ (complexity.c: linear, n log n, quadratic, cubic) with their specs
# (5 measured runs per n after 1 warmup) and prints, side by side, the true term and exponent
# against the terms qualify recovered from the median cpu time, the median wall time, and the
# operation count the program prints (an exact figure: a check of the fitter itself), with the
# bootstrap 95% interval of each exponent and the cross-validated fit error.
#
# Usage: bench/perf.sh
#        QUALIFY=/path/to/qualify bench/perf.sh   (measure with that binary, skip the build)
#        REPEAT=9 bench/perf.sh                   (measured runs per n)
# Needs: cargo, cc, python3. Builds with `cargo build --release`; honours CARGO_TARGET_DIR.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
REPEAT="${REPEAT:-5}"

if [[ -z "${QUALIFY:-}" ]]; then
    echo "building qualify (release)..." >&2
    (cd "$ROOT" && cargo build --release -p qualify --quiet)
    QUALIFY="$TARGET/release/qualify"
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cp "$ROOT/examples/perf/complexity.c" "$WORK/"
for m in linear nlogn quadratic cubic; do
    sed "s/^repeat = .*/repeat = $REPEAT/" "$ROOT/examples/perf/$m.toml" > "$WORK/$m.toml"
    start=$(date +%s.%N)
    # Exit status 1 (claim not supported: no [functional]) is expected; the receipt is what counts.
    (cd "$WORK" && "$QUALIFY" run "$m.toml" --receipt "$m.json" >/dev/null 2>"$m.err") || true
    [[ -s "$WORK/$m.json" ]] || { cat "$WORK/$m.err" >&2; exit 2; }
    echo "$m: $(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')") s" >&2
done

python3 - "$WORK" "$REPEAT" <<'PY'
import json, sys
work, repeat = sys.argv[1], sys.argv[2]
truth = {"linear": ("n", 1.0), "nlogn": ("n*log2(n)", 1.0),
         "quadratic": ("n^2", 2.0), "cubic": ("n^3", 3.0)}
def cell(perf, metric):
    for m in perf["models"]:
        if m["metric"] == metric:
            lo, hi = m["exponent_ci95"]
            return (f'{m["form"]:<16} {m["exponent"]:>4.2f} (eff {m["effective_exponent"]:.2f}) '
                    f'[{lo:.2f},{hi:.2f}] {100*m["error"]:>4.1f}%')
    return "no model"
print(f"exponents recovered ({repeat} runs per n after 1 warmup)")
print("each column: chosen form, exponent i, (effective slope i + j/ln(n_max)), [bootstrap 95% CI of i], cross-validated error")
print(f'{"program":<10} {"true":<10} {"i":>4}  | {"cpu (user+sys)":<47} | {"wall":<47} | {"work (exact count)":<47} | cpu i - true i')
for prog, (form, i) in truth.items():
    perf = json.load(open(f"{work}/{prog}.json"))["predicate"]["performance"]
    cpu = next((m["exponent"] for m in perf["models"] if m["metric"] == "cpu"), float("nan"))
    print(f'{prog:<10} {form:<10} {i:>4.2f}  | {cell(perf, "cpu"):<47} | {cell(perf, "wall"):<47} | {cell(perf, "work"):<47} | {cpu - i:+.2f}')
PY
