// Package metalimage knows metal-stack's firewall machine as its installer
// and image build it, for the lab and for tests that must meet the real
// machine rather than our idea of it: the nftables rules, FRR configuration,
// systemd-networkd files and systemd units metal-stack's os-installer renders
// from an allocation, and the files metal-images puts into the firewall
// image. Every fact names its source (repository and file); the code is our
// own rendering of those facts, checked by the programs that read them
// (nft --check, vtysh --dryrun, systemd-networkd, systemd) in the lab.
package metalimage
