#!/usr/bin/env bash
# Prints the failure messages of the Ginkgo specs in a `go test` log, short:
# make test ends with them, so that the last lines of a failed run (all a CI
# summary shows) say why, not only which spec. At most 3 failures of 12
# lines each, lines cut at 300 characters.
set -euo pipefail
log="${1:?usage: hack/test-failures.sh LOG}"
sed 's/\x1b\[[0-9;]*m//g' "$log" | awk '
  /^[[:space:]]*\[FAILED\] / && !/\[FAILED\] in \[/ && !/\[FAILED\] \[[0-9.]+ seconds\]/ {
    if (++blocks > 3) exit
    inblock = 1; n = 0; print "---"
  }
  inblock {
    if (++n <= 12) print substr($0, 1, 300)
    if ($0 ~ /^[[:space:]]*In \[[^]]*\] at: /) inblock = 0
  }'
