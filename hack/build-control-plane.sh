#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and etcd from the Go module
# proxy, because setup-envtest cannot download prebuilt binaries here.
# The binaries are cached per version outside the repository, so fresh clones
# and CI reuse them; a binary is only rebuilt when it is missing.
#
# Prints the folder that holds the binaries (usable as KUBEBUILDER_ASSETS).
set -euo pipefail

KUBERNETES_VERSION="${KUBERNETES_VERSION:-v1.36.4}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.8}"
CACHE_ROOT="${CONTROL_PLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gardener-extension-firewall/control-plane}"
DEST="$CACHE_ROOT/k8s-$KUBERNETES_VERSION-etcd-$ETCD_VERSION"
mkdir -p "$DEST"

log() { echo "build-control-plane: $*" >&2; }

staging_version="v0.${KUBERNETES_VERSION#v1.}"

build_kubernetes() {
  local work; work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  (
    cd "$work"
    go mod init control-plane-build >/dev/null 2>&1
    go mod edit -require "k8s.io/kubernetes@$KUBERNETES_VERSION"
    go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" >/dev/null
    local gomod; gomod="$(go env GOMODCACHE)/k8s.io/kubernetes@$KUBERNETES_VERSION/go.mod"
    # Kubernetes replaces its staging modules with local folders; point every one of
    # them at the published module of the same minor and patch instead.
    for m in $(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$gomod"); do
      go mod edit -replace "$m=$m@$staging_version"
    done
    cat > tools.go <<GO
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
GO
    GOFLAGS=-mod=mod go mod tidy
    local pkg="k8s.io/component-base/version"
    local ldflags="-s -w -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2) -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
    ldflags="$ldflags -X k8s.io/client-go/pkg/version.gitVersion=$KUBERNETES_VERSION"
    for bin in "$@"; do
      log "building $bin $KUBERNETES_VERSION (about 10 minutes cold on 2 cores)"
      CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$DEST/$bin.tmp" "k8s.io/kubernetes/cmd/$bin"
      mv "$DEST/$bin.tmp" "$DEST/$bin"
    done
  )
}

build_etcd() {
  local work; work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  (
    cd "$work"
    go mod init etcd-build >/dev/null 2>&1
    go mod edit -require "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    go mod download -json "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null
    printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > tools.go
    GOFLAGS=-mod=mod go mod tidy
    log "building etcd $ETCD_VERSION (about 2 minutes cold)"
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$DEST/etcd.tmp" go.etcd.io/etcd/server/v3
    mv "$DEST/etcd.tmp" "$DEST/etcd"
  )
}

missing=()
for bin in kube-apiserver kube-controller-manager; do
  [ -x "$DEST/$bin" ] || missing+=("$bin")
done
[ ${#missing[@]} -eq 0 ] || build_kubernetes "${missing[@]}"
[ -x "$DEST/etcd" ] || build_etcd

echo "$DEST"
