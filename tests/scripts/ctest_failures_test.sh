#!/usr/bin/env bash
# scripts/ctest-failures on a real ctest run: it names the failed test, shows the
# end of its output, and leaves passing tests out.
set -euo pipefail
root="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cat >"$work/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(fixture NONE)
enable_testing()
add_test(NAME fails COMMAND sh -c "echo first line; echo the reason it failed; exit 3")
add_test(NAME passes COMMAND sh -c "echo quiet")
EOF
cmake -S "$work" -B "$work/build" >/dev/null
if (cd "$work/build" && ctest >/dev/null 2>&1); then fail "the fixture's failing test passed"; fi
out="$("$root/scripts/ctest-failures" "$work/build" 1)"
grep -q -- "---- fails (last 1 lines of its output) ----" <<<"$out" || fail "no header: $out"
grep -q "the reason it failed" <<<"$out" || fail "no last line: $out"
if grep -q "first line" <<<"$out"; then fail "more than the last line: $out"; fi
if grep -q "passes\|quiet" <<<"$out"; then fail "a passing test is shown: $out"; fi
if "$root/scripts/ctest-failures" "$work/nowhere" 2>"$work/err"; then fail "a missing log passed"; fi
grep -q "cannot read" "$work/err" || fail "no message for a missing log"
echo "ok"
