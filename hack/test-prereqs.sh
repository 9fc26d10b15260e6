#!/usr/bin/env bash
# Makes this machine ready for `make test` / `make demo` / `make bench`, or
# says exactly what is missing. As root it installs missing Debian packages
# with apt; not as root it names them and the network-namespace tests skip.
#
# Usage: hack/test-prereqs.sh [root-only|bench]
#   root-only: the caller cannot run without root (make demo).
#   bench: root-only, and dnsperf is tried too (make bench); without it the DNS
#   proxy bench loads the proxy with its own Go generator and says so.
set -euo pipefail

# command:package pairs the network-namespace tests, the demo and the bench use.
# nft: the agent tests compare with `nft list`; ip: namespaces and veth;
# iperf3: the rate-limit and throughput tests; dnsmasq: the real resolver the
# DNS proxy (toFQDNs) is tested against.
NEEDED=(nft:nftables ip:iproute2 iperf3:iperf3 dnsmasq:dnsmasq-base)
# The lab (hack/build-lab.sh, test/lab): mmdebstrap builds its Debian image,
# mke2fs its disk, qemu runs it; flatcar/ignition builds against libblkid.
NEEDED+=(mmdebstrap:mmdebstrap mke2fs:e2fsprogs qemu-system-x86_64:qemu-system-x86 /usr/include/blkid/blkid.h:libblkid-dev)
# Wanted by the bench, not needed by anything.
OPTIONAL=()
if [ "${1:-}" = bench ]; then
  OPTIONAL=(dnsperf:dnsperf)
fi

log() { echo "test-prereqs: $*" >&2; }

if ! command -v go >/dev/null; then
  log "go is missing: install Go $(sed -n 's/^go //p' "$(dirname "$0")/../go.mod") or newer (e.g. to /usr/local/go) and put it on PATH"
  exit 1
fi

missing_pkgs=()
missing_cmds=()
# have tells whether a command (or, for a path, a file) is there.
have() {
  case "$1" in
    /*) [ -e "$1" ] ;;
    *) command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] ;;
  esac
}

for pair in "${NEEDED[@]}"; do
  if ! have "${pair%%:*}"; then
    missing_cmds+=("${pair%%:*}")
    missing_pkgs+=("${pair#*:}")
  fi
done

if [ "$(id -u)" != 0 ]; then
  if [ "${1:-}" = root-only ] || [ "${1:-}" = bench ]; then
    log "this target needs root (network namespaces, nftables): run it as root, e.g. sudo make ..."
    exit 1
  fi
  log "not root: the network-namespace suites (the agent in namespaces, packet checks, e2e migration with machines) are skipped; every other suite runs."
  if (( ${#missing_pkgs[@]} )); then
    log "to run them too: sudo apt-get install -y ${missing_pkgs[*]} && sudo make test"
  else
    log "to run them too: sudo make test"
  fi
  exit 0
fi

if (( ${#missing_pkgs[@]} )); then
  log "installing ${missing_pkgs[*]} (missing: ${missing_cmds[*]})"
  if ! command -v apt-get >/dev/null; then
    log "no apt-get on this machine: install the packages that provide ${missing_cmds[*]} yourself"
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing_pkgs[@]}" >/dev/null; }; then
    log "apt-get could not install ${missing_pkgs[*]}; install them by hand (apt-get install ${missing_pkgs[*]})"
    exit 1
  fi
fi
for pair in "${NEEDED[@]}"; do
  c="${pair%%:*}"
  if ! have "$c"; then
    log "$c is still missing after installing ${pair#*:}"
    exit 1
  fi
done

missing_optional=()
for pair in "${OPTIONAL[@]}"; do
  if ! command -v "${pair%%:*}" >/dev/null 2>&1; then
    missing_optional+=("${pair#*:}")
  fi
done
if (( ${#missing_optional[@]} )); then
  log "installing ${missing_optional[*]} (optional)"
  export DEBIAN_FRONTEND=noninteractive
  if ! { command -v apt-get >/dev/null && apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing_optional[@]}" >/dev/null; }; then
    log "could not install ${missing_optional[*]}: the DNS proxy bench uses its Go load generator instead"
  fi
fi
