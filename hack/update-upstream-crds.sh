#!/usr/bin/env bash
# Copies the CRDs this extension depends on from the pinned gardener module
# into upstream-crds/, so tests and the demo install exactly the versions the
# code is built against. Run through `make generate`; never edit the output.
set -euo pipefail

cd "$(dirname "$0")/.."
# `go list -m` does not download; on a fresh machine the module must be fetched first.
go mod download github.com/gardener/gardener
gardener_dir="$(go list -m -f '{{.Dir}}' github.com/gardener/gardener)"
[ -n "$gardener_dir" ] || { echo "update-upstream-crds: github.com/gardener/gardener is not in the module cache" >&2; exit 1; }
out=upstream-crds
rm -f "$out"/*.yaml

for crd in clusters extensions infrastructures; do
  cp "$gardener_dir/pkg/component/extensions/crds/assets/crd-extensions.gardener.cloud_$crd.yaml" "$out/"
done
cp "$gardener_dir/pkg/component/gardener/resourcemanager/assets/crd-resources.gardener.cloud_managedresources.yaml" "$out/"
# Istio's CRDs as gardener deploys them into seeds.
cp "$gardener_dir/pkg/component/networking/istio/charts/istio/istio-crds/crd-all.gen.yaml" "$out/crd-istio.yaml"
chmod 0644 "$out"/*.yaml
