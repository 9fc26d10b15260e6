#!/usr/bin/env bash
# Signs a firewall-agent binary for the agent's self-update
# (docs/operations/firewall/self-update.md): an Ed25519 signature, made with
# openssl, over the release message that binds the version to the binary's
# SHA-256. Writes <binary>.sig (64 raw bytes) and prints the SHA-256 to put
# into agentSHA256 (or sources.static.agent.sha256).
#
# Usage: hack/sign-agent-release.sh <private-key.pem> <version> <binary>
# A key pair: openssl genpkey -algorithm ed25519 -out release-key.pem
#             openssl pkey -in release-key.pem -pubout -out update.pub
set -euo pipefail
usage="usage: hack/sign-agent-release.sh <private-key.pem> <version> <binary>"
key="${1:?$usage}"
version="${2:?$usage}"
binary="${3:?$usage}"
if [[ ! "$version" =~ ^[[:graph:]]+$ ]]; then
  echo "sign-agent-release: the version must not contain blanks or control characters: $version" >&2
  exit 1
fi
sha="$(sha256sum "$binary" | cut -d' ' -f1)"
msg="$(mktemp)"
trap 'rm -f "$msg"' EXIT
# The message the agent verifies (pkg/firewall/selfupdate.SignedMessage).
printf 'firewall-agent-release-v1\nversion: %s\nsha256: %s\n' "$version" "$sha" >"$msg"
openssl pkeyutl -sign -rawin -inkey "$key" -in "$msg" -out "$binary.sig"
echo "$sha"
