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

# metal-stack's ClusterwideNetworkPolicy CRD (metal-stack.io/v1), which shoots
# moved from firewall-controller still hold: the shoot tests install it to show
# the agent reads those policies. A shoot CRD, so apart from the seed's.
fc_module=github.com/metal-stack/firewall-controller/v2
fc_version=v2.5.0
fc_dir="$(go mod download -json "$fc_module@$fc_version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -n "$fc_dir" ] || { echo "update-upstream-crds: $fc_module@$fc_version could not be downloaded" >&2; exit 1; }
mkdir -p "$out/shoot"
rm -f "$out"/shoot/*.yaml
{
  echo "# Copied by hack/update-upstream-crds.sh from $fc_module@$fc_version,"
  echo "# config/crd/bases/metal-stack.io_clusterwidenetworkpolicies.yaml. Do not edit."
  echo "# Its license:"
  echo "#"
  sed 's/^/# /; s/ $//' "$fc_dir/LICENSE"
  cat "$fc_dir/config/crd/bases/metal-stack.io_clusterwidenetworkpolicies.yaml"
} > "$out/shoot/crd-metal-stack.io_clusterwidenetworkpolicies.yaml"
# firewall-controller-manager's FirewallMonitor CRD (firewall.metal-stack.io/v2),
# the version firewall-controller v2.5.0 requires: the agent keeps one current in
# shoots that hold it.
fcm_module=github.com/metal-stack/firewall-controller-manager
fcm_version=v0.6.1
fcm_dir="$(go mod download -json "$fcm_module@$fcm_version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -n "$fcm_dir" ] || { echo "update-upstream-crds: $fcm_module@$fcm_version could not be downloaded" >&2; exit 1; }
{
  echo "# Copied by hack/update-upstream-crds.sh from $fcm_module@$fcm_version,"
  echo "# config/crds/firewall.metal-stack.io_firewallmonitors.yaml. Do not edit."
  echo "# Its license:"
  echo "#"
  sed 's/^/# /; s/ $//' "$fcm_dir/LICENSE"
  cat "$fcm_dir/config/crds/firewall.metal-stack.io_firewallmonitors.yaml"
} > "$out/shoot/crd-firewall.metal-stack.io_firewallmonitors.yaml"
# firewall-controller-manager's FirewallDeployment CRD, which
# gardener-extension-provider-metal writes into every metal shoot's namespace of
# the seed: the webhook that holds its replicas is tested against it.
{
  echo "# Copied by hack/update-upstream-crds.sh from $fcm_module@$fcm_version,"
  echo "# config/crds/firewall.metal-stack.io_firewalldeployments.yaml. Do not edit."
  echo "# Its license:"
  echo "#"
  sed 's/^/# /; s/ $//' "$fcm_dir/LICENSE"
  cat "$fcm_dir/config/crds/firewall.metal-stack.io_firewalldeployments.yaml"
} > "$out/crd-firewall.metal-stack.io_firewalldeployments.yaml"
# The rest of firewall-controller-manager's seed CRDs, which its own binary
# needs (test/integration/providermetal runs it): a folder of their own, so
# that only that test has firewall.metal-stack.io's Firewall and FirewallSet.
mkdir -p "$out/fcm"
rm -f "$out"/fcm/*.yaml
for crd in firewallsets firewalls; do
  {
    echo "# Copied by hack/update-upstream-crds.sh from $fcm_module@$fcm_version,"
    echo "# config/crds/firewall.metal-stack.io_$crd.yaml. Do not edit."
    echo "# Its license:"
    echo "#"
    sed 's/^/# /; s/ $//' "$fcm_dir/LICENSE"
    cat "$fcm_dir/config/crds/firewall.metal-stack.io_$crd.yaml"
  } > "$out/fcm/crd-firewall.metal-stack.io_$crd.yaml"
done
# Its defaulting and validating webhooks, which the test registers for it.
mkdir -p "$out/fcm/webhooks"
{
  echo "# Copied by hack/update-upstream-crds.sh from $fcm_module@$fcm_version,"
  echo "# config/webhooks/manifests.yaml. Do not edit. Its license: as in ../crd-firewall.metal-stack.io_firewalls.yaml."
  cat "$fcm_dir/config/webhooks/manifests.yaml"
} > "$out/fcm/webhooks/manifests.yaml"
# Its own example policies (not a CRD: kept out of the directory tests install).
mkdir -p "$out/examples"
{
  echo "# Copied by hack/update-upstream-crds.sh from $fc_module@$fc_version,"
  echo "# deploy/clusterwidenetworkpolicy.yaml. Do not edit. Its license: MIT, as in"
  echo "# ../shoot/crd-metal-stack.io_clusterwidenetworkpolicies.yaml (Copyright (c) 2020 The metal-stack Authors)."
  cat "$fc_dir/deploy/clusterwidenetworkpolicy.yaml"
} > "$out/examples/metal-stack.io_clusterwidenetworkpolicy.yaml"

chmod 0644 "$out"/*.yaml "$out"/shoot/*.yaml "$out"/fcm/*.yaml "$out"/fcm/webhooks/*.yaml "$out"/examples/*.yaml
