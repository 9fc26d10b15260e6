package nftables

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// generation returns the nftables ruleset generation of the namespace: the
// kernel increments it with every committed transaction, whoever sends it.
// google/nftables v0.3.0 has no call for NFT_MSG_GETGEN, so it is sent here.
func generation(nsPath string) (uint32, error) {
	cfg := &netlink.Config{}
	if nsPath != "" {
		f, err := os.Open(nsPath)
		if err != nil {
			return 0, fmt.Errorf("opening network namespace: %w", err)
		}
		defer func() { _ = f.Close() }()
		cfg.NetNS = int(f.Fd())
	}
	conn, err := netlink.Dial(unix.NETLINK_NETFILTER, cfg)
	if err != nil {
		return 0, fmt.Errorf("dialing netfilter netlink: %w", err)
	}
	defer func() { _ = conn.Close() }()
	msgs, err := conn.Execute(netlink.Message{
		Header: netlink.Header{
			Type:  netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_GETGEN),
			Flags: netlink.Request,
		},
		// struct nfgenmsg: family, version, resource id.
		Data: []byte{unix.AF_UNSPEC, unix.NFNETLINK_V0, 0, 0},
	})
	if err != nil {
		return 0, fmt.Errorf("reading nftables generation: %w", err)
	}
	for _, m := range msgs {
		if len(m.Data) < 4 {
			continue
		}
		ad, err := netlink.NewAttributeDecoder(m.Data[4:])
		if err != nil {
			return 0, err
		}
		ad.ByteOrder = binary.BigEndian
		for ad.Next() {
			if ad.Type() == unix.NFTA_GEN_ID {
				return ad.Uint32(), nil
			}
		}
	}
	return 0, fmt.Errorf("no generation in the kernel's answer")
}
