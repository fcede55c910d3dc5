#!/usr/bin/env bash
# Benchmark (not a test) of how runs are scheduled and located on a noisy machine: the
# performance analysis over simulated `qualify run`s whose truth is known (a neighbour slowing
# runs up to 1.8×, slow periods lasting several runs), measured back to back and located by the
# median ("old") beside shuffled rounds located by the minimum ("new", what `qualify run` does),
# printed side by side per truth. Deterministic: the same seeds give the same table.
#
# Usage: bench/noisy.sh [SEEDS]   (simulated runs per truth and way; default 40)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo run --release --quiet -p qualify-perf --example noisy_machine -- "${1:-40}"
