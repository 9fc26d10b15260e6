#!/usr/bin/env bash
# Builds the lab (test/lab): a Debian 13 root from Debian's packages with
# mmdebstrap, as an ext4 disk image with its kernel and initrd beside it, and
# flatcar/ignition v0.36.2's `ignition` binary from the Go module proxy (the
# version metal-stack's installer runs). The lab boots the image in a virtual
# machine (qemu, software emulation: this machine's kernel has no VRFs and
# its KVM does not run guests) that is the leaf switch, and whose firewall
# machines are systemd-nspawn containers booted from the same image.
#
# The root is also the firewall image: it gets what metal-stack's firewall
# image has of what the agent meets (each line below names its source in
# github.com/metal-stack/metal-images or os-installer), but not the agent:
# tests put it there as the image recipe does, or the userdata downloads it.
#
# Everything is cached outside the clone under a hash of this script; nothing
# is rebuilt while the script is unchanged. Prints the lab folder. Root only.
set -euo pipefail

CACHE_ROOT="${LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gardener-extension-firewall/lab}"
IGNITION_VERSION="v0.36.2"
SUITE="trixie"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
recipe="$(sha256sum "$0" | cut -c1-12)"
DEST="$CACHE_ROOT/debian-$SUITE-$recipe"

log() { echo "build-lab: $*" >&2; }

# stdout is the lab folder's alone (make reads it): what the tools say goes
# to stderr (mke2fs says "Creating regular file" on stdout).
exec 3>&1 1>&2

if [ "$(id -u)" != 0 ]; then
  log "needs root (mmdebstrap builds a root file system with its owners)"
  exit 1
fi
for c in mmdebstrap mke2fs qemu-system-x86_64; do
  if ! command -v "$c" >/dev/null; then
    log "$c is missing: hack/test-prereqs.sh installs it (mmdebstrap, e2fsprogs, qemu-system-x86)"
    exit 1
  fi
done

build_ignition() {
  local out="$1" work
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  (
    cd "$work"
    go mod init lab-ignition >/dev/null 2>&1
    go mod edit -require "github.com/flatcar/ignition@$IGNITION_VERSION"
    cat > tools.go <<GO
//go:build tools

package tools

import _ "github.com/flatcar/ignition/internal"
GO
    GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1
    log "building flatcar/ignition $IGNITION_VERSION (about a minute; needs Debian's libblkid-dev)"
    # cgo: ignition links libblkid, as the binary in metal-stack's images does.
    GOFLAGS=-mod=mod go build -trimpath -ldflags "-X github.com/flatcar/ignition/internal/version.Raw=$IGNITION_VERSION" \
      -o "$out.tmp" github.com/flatcar/ignition/internal
    mv "$out.tmp" "$out"
  )
}

# customize runs in the new root (mmdebstrap's customize hook, $1 is the root).
customize() {
  local root="$1"
  # The lab machine's own needs: its root disk and the guest agent the tests
  # command it through.
  echo '/dev/vda / ext4 defaults 0 1' >"$root/etc/fstab"
  echo rack >"$root/etc/hostname"
  # metal-images debian/Dockerfile: multi-user.target; frr and
  # systemd-networkd enabled. firewall/Dockerfile: nftables enabled.
  chroot "$root" systemctl set-default multi-user.target
  chroot "$root" systemctl enable frr.service systemd-networkd.service nftables.service
  # metal-images firewall/context/etc/nftables.conf: flush, then the
  # installer's files (firewall/context/etc/nftables/rules.v4 and .v6 are empty).
  printf '#!/usr/sbin/nft -f\n\nflush ruleset\n\ninclude "/etc/nftables/*"\n' >"$root/etc/nftables.conf"
  mkdir -p "$root/etc/nftables"
  : >"$root/etc/nftables/rules.v4"
  : >"$root/etc/nftables/rules.v6"
  # metal-images debian/context/etc/frr/daemons: zebra and bgpd.
  sed -i 's/^bgpd=no/bgpd=yes/' "$root/etc/frr/daemons"
  # Not the image's: under software emulation FRR's daemons take longer to
  # start than watchfrr waits, so it restarts them all, and its 20 s for that
  # restart end before the configuration is loaded (a peer without address
  # families is the result). The lab's machines are slow, not different.
  echo 'watchfrr_options="-T 180"' >>"$root/etc/frr/daemons"
  # metal-images debian/context/etc/sysctl.d/99-frr_defaults.conf (the
  # settings routing and VRFs depend on) and firewall/context/etc/sysctl.d/10-netfilter.conf.
  cat >"$root/etc/sysctl.d/99-frr_defaults.conf" <<'EOF'
net.ipv4.ip_forward = 1
net.ipv6.conf.all.forwarding=1
net.ipv4.conf.all.ignore_routes_with_linkdown=1
net.ipv6.conf.all.ignore_routes_with_linkdown=1
net.ipv4.conf.all.rp_filter = 0
net.ipv4.conf.default.rp_filter = 0
net.ipv4.conf.lo.rp_filter = 0
net.ipv4.conf.all.forwarding = 1
net.ipv4.conf.default.forwarding = 1
net.ipv6.conf.all.keep_addr_on_down=1
net.ipv4.fib_multipath_use_neigh=1
net.ipv4.tcp_l3mdev_accept=1
EOF
  echo 'net.netfilter.nf_conntrack_acct = 1' >"$root/etc/sysctl.d/10-netfilter.conf"
  # metal-images firewall/Dockerfile installs firewall-controller and the
  # droptailer client; os-installer enables their units. Here they behave as
  # the real ones do without a kubeconfig or certificate: they exit at once.
  mkdir -p "$root/etc/firewall-controller" "$root/etc/droptailer-client"
  printf '#!/bin/sh\necho "firewall-controller: no kubeconfig at $KUBECONFIG" >&2\nexit 1\n' >"$root/usr/local/bin/firewall-controller"
  printf '#!/bin/sh\necho "droptailer-client: no client certificate" >&2\nexit 1\n' >"$root/usr/local/bin/droptailer-client"
  chmod 0755 "$root/usr/local/bin/firewall-controller" "$root/usr/local/bin/droptailer-client"
  # The image is the lower layer of every firewall: no machine ID of its own.
  : >"$root/etc/machine-id"
}

if [ "${1:-}" = --customize ]; then
  customize "$2"
  exit 0
fi

if [ ! -f "$DEST/ready" ]; then
  log "building the lab image (Debian 13 from Debian's packages, about 3 minutes the first time)"
  rm -rf "$DEST"
  mkdir -p "$DEST"
  work="$(mktemp -d "$CACHE_ROOT/build-XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  mmdebstrap --variant=minbase --quiet \
    --include=systemd,systemd-sysv,dbus,udev,kmod,netbase,linux-image-amd64,initramfs-tools,nftables,iproute2,frr,frr-pythontools,qemu-guest-agent,systemd-container,openssl,ca-certificates,iperf3,procps,iputils-ping \
    --customize-hook="\"$(realpath "$0")\" --customize \"\$1\"" \
    "$SUITE" "$work/root" "$MIRROR" >&2
  cp "$work"/root/boot/vmlinuz-* "$DEST/vmlinuz"
  cp "$work"/root/boot/initrd.img-* "$DEST/initrd.img"
  mke2fs -q -t ext4 -d "$work/root" -L lab "$DEST/root.img" 3G
  rm -rf "$work"
  trap - EXIT
  touch "$DEST/ready"
fi
if [ ! -x "$DEST/ignition" ]; then
  build_ignition "$DEST/ignition"
fi
echo "$DEST" >&3
