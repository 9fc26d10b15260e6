#!/usr/bin/env bash
# make extension-up / extension-dev / extension-down: this extension in
# Gardener's local setup (kind clusters with gardener-operator, brought up in a
# gardener checkout). skaffold builds the extension's image with ko and its
# chart with Gardener's hack/push-helm.sh, pushes both to the local registry
# and applies the operator Extension of dev-setup/local into the runtime
# cluster, where gardener-operator registers it in the garden.
#
# Usage: hack/local-setup.sh up|dev|down
set -euo pipefail
mode="${1:?usage: $0 up|dev|down}"
kubeconfig="${RUNTIME_KUBECONFIG:?RUNTIME_KUBECONFIG is not set}"

missing=()
[ -f "$kubeconfig" ] || missing+=("the runtime cluster's kubeconfig $kubeconfig (run 'make kind-up gardener-up' in a gardener checkout at GARDENER_REPO_ROOT, or set RUNTIME_KUBECONFIG)")
if [ "$mode" != down ]; then
  for tool in helm yq; do
    command -v "$tool" >/dev/null || missing+=("$tool on PATH (Gardener's hack/push-helm.sh packages and pushes the chart with it)")
  done
fi
if [ "${#missing[@]}" -gt 0 ]; then
  printf 'extension-%s needs:\n' "$mode" >&2
  printf '  - %s\n' "${missing[@]}" >&2
  exit 1
fi

tools="$(hack/build-skaffold.sh)"
export PATH="$tools:$PATH"
export GARDENER_HACK_DIR="${GARDENER_HACK_DIR:-$(go list -m -f '{{.Dir}}' github.com/gardener/gardener)/hack}"
export SKAFFOLD_DEFAULT_REPO="${SKAFFOLD_DEFAULT_REPO:-registry.local.gardener.cloud:5001}"
export SKAFFOLD_PUSH=true
export LD_FLAGS="${LD_FLAGS:--w}"
case "$mode" in
  up) exec skaffold run --kubeconfig="$kubeconfig" ;;
  dev) exec skaffold dev --cleanup=false --trigger=manual --kubeconfig="$kubeconfig" ;;
  down) exec skaffold delete --kubeconfig="$kubeconfig" ;;
  *) echo "usage: $0 up|dev|down" >&2; exit 1 ;;
esac
