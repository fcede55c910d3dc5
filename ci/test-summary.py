#!/usr/bin/env python3
"""Summarise a `cargo test --no-fail-fast` log: every failed test with its test binary, and the
slowest test binaries. Reads the log on stdin or from the file given; prints to stdout; exits 0
(the caller keeps cargo's own status)."""
import re
import sys

RUNNING = re.compile(r"^\s+Running (?:unittests )?(\S+) \((\S+)\)")
DOCTESTS = re.compile(r"^\s+Doc-tests (\S+)")
RESULT = re.compile(
    r"^test result: (\w+)\. (\d+) passed; (\d+) failed; (\d+) ignored; .* finished in ([\d.]+)s"
)
FAILED = re.compile(r"^test (\S+) \.\.\. FAILED")


def main() -> None:
    text = open(sys.argv[1], errors="replace") if len(sys.argv) > 1 else sys.stdin
    current = "?"
    crate = ""
    binaries = []  # (seconds, name, passed, failed)
    failures = []  # (binary, test)
    for line in text:
        m = RUNNING.match(line)
        if m:
            source, binary = m.groups()
            # target/debug/deps/probe_cli-c76c7968f2245e68 → probe_cli (tests/probe_cli.rs)
            name = binary.rsplit("/", 1)[-1].rsplit("-", 1)[0]
            current = f"{name} ({source})"
            continue
        m = DOCTESTS.match(line)
        if m:
            current = f"doc-tests {m.group(1)}"
            continue
        m = FAILED.match(line)
        if m:
            failures.append((current, m.group(1)))
            continue
        m = RESULT.match(line)
        if m:
            _, passed, failed, _, seconds = m.groups()
            binaries.append((float(seconds), current, int(passed), int(failed)))
    print("\n=== test summary ===")
    total = sum(b[0] for b in binaries)
    print(f"{len(binaries)} test binaries, {sum(b[2] for b in binaries)} passed, "
          f"{sum(b[3] for b in binaries)} failed, {total:.0f} s in tests")
    print("slowest test binaries:")
    for seconds, name, passed, failed in sorted(binaries, reverse=True)[:12]:
        mark = f", {failed} FAILED" if failed else ""
        print(f"  {seconds:8.1f} s  {name}: {passed} passed{mark}")
    if failures:
        print(f"FAILED tests ({len(failures)}):")
        for binary, test in failures:
            print(f"  {binary}: {test}")
    else:
        print("no test failed")


if __name__ == "__main__":
    main()
