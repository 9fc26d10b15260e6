#!/usr/bin/env bash
# What the test suites start on this host and must remove again: processes
# (agents, probes, the lab's qemu, control planes, resolvers), network
# namespaces, the lab's tap and the suites' temporary folders.
#
# Usage: hack/leftovers.sh snapshot FILE   records what is there now
#        hack/leftovers.sh check FILE      fails naming what appeared since
# Only what appeared after the snapshot counts: what another run or the
# machine had before is not this run's. LEFTOVERS_WAIT (seconds, default 15)
# bounds how long check waits for what is still going away.
set -euo pipefail

# The command names (comm, at most 15 characters) of what the suites start.
COMMANDS='^(firewall-agent|labprobe|qemu-system-x86|kube-apiserver|kube-controller|etcd|iperf3|dnsmasq|dnsperf|gardener-extens)$'

state() {
  ps -eo pid=,comm=,args= | awk -v re="$COMMANDS" '$2 ~ re { $1 = "process " $1; print }' | cut -c1-200
  ip netns list 2>/dev/null | awk '{ print "netns " $1 }'
  ip -o link show 2>/dev/null | awk -F': ' '$2 ~ /^(fwlab|lab)/ { print "link " $2 }'
  find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'ginkgo*' -printf 'folder %p\n' 2>/dev/null
}

case "${1:-}" in
snapshot)
  state | sort >"$2"
  ;;
check)
  # A process a suite stopped may take a moment to exit: wait for the state,
  # at most LEFTOVERS_WAIT seconds.
  left="$(state | sort | comm -13 "$2" -)"
  for _ in $(seq $((${LEFTOVERS_WAIT:-15} * 2))); do
    [ -z "$left" ] && break
    sleep 0.5
    left="$(state | sort | comm -13 "$2" -)"
  done
  if [ -n "$left" ]; then
    echo "make test: the suites left these behind:" >&2
    echo "$left" | sed 's/^/  /' >&2
    exit 1
  fi
  ;;
*)
  echo "usage: $0 snapshot|check FILE" >&2
  exit 2
  ;;
esac
