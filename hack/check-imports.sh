#!/usr/bin/env bash
# Keeps the layering true (make check): a package never imports a layer above
# it, and no importable package name appears twice.
#   - the seed webhooks, the garden admission (package and binary) and the
#     registration generator import no controller;
#   - the generic firewall manager imports no extension package (controllers
#     of the extension types, webhooks, admission, the ACL's Envoy code);
#   - the firewall agent imports nothing of the seed side;
#   - API packages and constants import nothing above pkg/apis and pkg/utils.
# Package names: `main`, `app` (cmd/<binary>/app), and the API packages'
# `v1alpha1` and `validation` follow Kubernetes' and Gardener's convention and
# are imported with aliases; every other name is unique.
set -euo pipefail
# Usage: hack/check-imports.sh [module root]   (default: this clone)
cd "${1:-$(dirname "$0")/..}"
M=github.com/metal-firewall/gardener-extension-firewall

bad=0
# deny <packages> <regex of forbidden imports> <why>
deny() {
  local pkgs="$1" forbidden="$2" why="$3" deps hits
  # A failing go list must fail the check, not pass it with no imports.
  deps="$(go list -deps $pkgs)" || { echo "check-imports: go list $pkgs failed" >&2; exit 1; }
  hits="$(echo "$deps" | grep -E "^$M/($forbidden)" || true)"
  if [ -n "$hits" ]; then
    echo "check-imports: $pkgs imports $(echo "$hits" | sed "s#$M/##" | tr '\n' ' ')($why)" >&2
    bad=1
  fi
}

deny "./pkg/webhook/... ./pkg/admission/... ./cmd/gardener-extension-firewall-admission/... ./hack/tools/controller-registration" \
  "pkg/controller/" "webhooks and admission import no controller: shared names belong in pkg/constants or an API package"
deny "./pkg/controller/manager/..." \
  "pkg/controller/(acl|firewall|healthcheck|csrapprover)(/|$)|pkg/webhook/|pkg/admission/|pkg/acl/" "the generic firewall manager imports no extension package"
deny "./pkg/firewall/... ./cmd/firewall-agent/..." \
  "pkg/controller/|pkg/webhook/|pkg/admission/|pkg/credentials|pkg/acl/" "the agent imports nothing of the seed side"
deny "./pkg/apis/... ./pkg/constants/... ./pkg/utils/..." \
  "pkg/(controller|webhook|admission|credentials|acl|firewall)/" "APIs, constants and utils are the bottom layer"

names="$(go list -f '{{if .GoFiles}}{{.Name}} {{.ImportPath}}{{end}}' ./...)" || { echo "check-imports: go list failed" >&2; exit 1; }
dups="$(echo "$names" \
  | awk '$1 !~ /^(main|app|v1alpha1|validation)$/ {n[$1]++; p[$1]=p[$1] " " $2} END {for (k in n) if (n[k] > 1) print k ":" p[k]}')"
if [ -n "$dups" ]; then
  echo "check-imports: package names used twice (rename one):" >&2
  echo "$dups" | sed "s#$M/##g" >&2
  bad=1
fi

if (( bad )); then exit 1; fi
echo "check-imports: layering holds, package names are unique"
