#!/usr/bin/env bash
# Runs the Go fuzz targets of the decoders and validations of what users write
# (both providerConfigs and the agent's config), one after the other, each for
# the given -fuzztime: go test -fuzz takes one package at a time. A crasher is
# saved under its package's testdata/fuzz, and every go test replays it.
# Prefer a count (20000x): with a duration, Go 1.26's coordinator may report
# "context deadline exceeded" as a failure when the time is up (golang/go#75804,
# fixed in Go 1.27), which would fail make test without any crasher.
#
# Usage: hack/fuzz.sh <fuzztime>   (e.g. 20000x, or a duration such as 2m)
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:?usage: hack/fuzz.sh <fuzztime>}"

targets=(
  ./pkg/utils/strict:FuzzDecode
  ./pkg/apis/acl/validation:FuzzParse
  ./pkg/apis/firewall/validation:FuzzDecodeFirewallExtensionConfig
  ./pkg/firewall/config:FuzzParse
  ./pkg/firewall/fqdn:FuzzMatches
  ./pkg/firewall/dnsproxy:FuzzAnswerAddresses
  ./pkg/firewall/droplog:FuzzDecode
  ./pkg/webhook/providerfirewall:FuzzHandle
)
for target in "${targets[@]}"; do
  pkg="${target%%:*}" fn="${target##*:}"
  echo "fuzz: $fn in $pkg for $fuzztime"
  go test -run '^$' -fuzz "^${fn}\$" -fuzztime "$fuzztime" "$pkg"
done
