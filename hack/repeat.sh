#!/usr/bin/env bash
# Runs the root and integration suites (every package but the e2e suites)
# ROUNDS times in a row, as `make test` runs them, each round followed by
# the leftover check; stops at the first failure and says which round.
# Prints "test-repeat: N of ROUNDS rounds passed". Each round's output is
# kept in OUT (a temporary folder unless set).
#
# Usage: hack/repeat.sh ROUNDS
set -euo pipefail
rounds="${1:?usage: $0 ROUNDS}"
out="${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/test-repeat.XXXXXX")}"
mkdir -p "$out"
assets="$(hack/build-control-plane.sh)"
mapfile -t packages < <(go list ./... | grep -v /test/e2e/)
passed=0
echo "test-repeat: $rounds rounds of go test ${GO_TEST_FLAGS:--timeout 30m} -count=1 over ${#packages[@]} packages; outputs in $out"
for round in $(seq "$rounds"); do
  snap="$(mktemp)"
  hack/leftovers.sh snapshot "$snap"
  start=$(date +%s)
  log="$out/round-$round.log"
  if ! KUBEBUILDER_ASSETS="$assets" go test ${GO_TEST_FLAGS:--timeout 30m} -count=1 "${packages[@]}" >"$log" 2>&1; then
    grep -E '^(FAIL|--- FAIL|ok )|\[FAIL\]' "$log" | grep -v '^ok ' >&2 || true
    echo "test-repeat: round $round failed after $passed of $rounds passed; its output: $log" >&2
    rm -f "$snap"
    exit 1
  fi
  if ! hack/leftovers.sh check "$snap"; then
    echo "test-repeat: round $round left the above behind after $passed of $rounds passed; its output: $log" >&2
    rm -f "$snap"
    exit 1
  fi
  rm -f "$snap"
  passed=$((passed + 1))
  echo "test-repeat: round $round passed in $(($(date +%s) - start)) s"
done
echo "test-repeat: $passed of $rounds rounds passed (outputs in $out)"
