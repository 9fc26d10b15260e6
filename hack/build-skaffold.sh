#!/usr/bin/env bash
# Builds skaffold and kustomize, the tools of Gardener's local setup
# (make extension-up), from the Go module proxy into the tools cache outside
# the clone, once per version. skaffold's go.mod has replace directives, so
# `go install module@version` refuses it: it is built inside a copy of its
# module. Prints the folder that holds both (`skaffold`, `kustomize`); put it
# first on PATH, skaffold runs kustomize from there.
set -euo pipefail

SKAFFOLD_VERSION="${SKAFFOLD_VERSION:-v2.16.1}"
KUSTOMIZE_VERSION="${KUSTOMIZE_VERSION:-v5.7.1}"
TOOLS_BIN="${TOOLS_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/gardener-extension-firewall/tools}"
dest="$TOOLS_BIN/localsetup-skaffold-$SKAFFOLD_VERSION-kustomize-$KUSTOMIZE_VERSION"

log() { echo "build-skaffold: $*" >&2; }

if [ -x "$dest/skaffold" ] && [ -x "$dest/kustomize" ]; then
  echo "$dest"
  exit 0
fi
mkdir -p "$TOOLS_BIN"
work="$(mktemp -d "$TOOLS_BIN/.localsetup.XXXXXX")"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

log "building kustomize $KUSTOMIZE_VERSION"
GOBIN="$work" go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION" >&2

log "building skaffold $SKAFFOLD_VERSION (a few minutes the first time)"
src="$(go mod download -json "github.com/GoogleContainerTools/skaffold/v2@$SKAFFOLD_VERSION" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [ -z "$src" ]; then
  log "the Go module proxy did not serve skaffold $SKAFFOLD_VERSION"
  exit 1
fi
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
(cd "$work/src" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath \
  -ldflags "-X github.com/GoogleContainerTools/skaffold/v2/pkg/skaffold/version.version=$SKAFFOLD_VERSION" \
  -o "$work/skaffold" ./cmd/skaffold) >&2

mkdir -p "$work/out"
mv "$work/skaffold" "$work/kustomize" "$work/out/"
rm -rf "$dest"
mv "$work/out" "$dest"
echo "$dest"
