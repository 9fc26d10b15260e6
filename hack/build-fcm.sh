#!/usr/bin/env bash
# Builds firewall-controller-manager, the version test/fcm/go.mod pins (the
# one gardener-extension-provider-metal deploys), from the module proxy with
# its own dependencies: the nested module test/fcm holds nothing else. The
# binary is cached outside the repository per version and go.sum, and built
# only when it is missing.
#
# Prints the binary's path.
set -euo pipefail

cd "$(dirname "$0")/.."
module=github.com/metal-stack/firewall-controller-manager
version="$(sed -n "s#^require $module \(v[^ ]*\)\$#\1#p" test/fcm/go.mod)"
[ -n "$version" ] || { echo "build-fcm: test/fcm/go.mod requires no $module" >&2; exit 1; }
sum="$(cat test/fcm/go.mod test/fcm/go.sum | sha256sum | cut -c1-12)"
dest="${FCM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gardener-extension-firewall/fcm}/$version-$sum"
bin="$dest/firewall-controller-manager"
if [ ! -x "$bin" ]; then
  mkdir -p "$dest"
  echo "build-fcm: building $module $version (about a minute cold on 2 cores)" >&2
  (cd test/fcm && CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath -o "$bin.tmp" "$module")
  mv "$bin.tmp" "$bin"
fi
echo "$bin"
