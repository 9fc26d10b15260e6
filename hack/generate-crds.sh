#!/usr/bin/env bash
# Generates deepcopy functions and CRDs for pkg/apis/firewall with
# controller-gen, then sorts the CRDs into the seed's and the shoot's folder
# (the extension installs the shoot kinds into the shoot).
set -euo pipefail

cd "$(dirname "$0")/.."
controller_gen="$1"
crds=pkg/apis/firewall/crds
shoot_kinds="clusterwidenetworkpolicies firewallmonitors"

"$controller_gen" object paths=./pkg/apis/...
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$controller_gen" crd paths=./pkg/apis/firewall/... output:crd:dir="$tmp"

rm -rf "$crds/seed" "$crds/shoot"
mkdir -p "$crds/seed" "$crds/shoot"
for f in "$tmp"/*.yaml; do
  plural="$(basename "$f" .yaml)"; plural="${plural#*_}"
  dest=seed
  for k in $shoot_kinds; do [ "$plural" = "$k" ] && dest=shoot; done
  mv "$f" "$crds/$dest/"
done
