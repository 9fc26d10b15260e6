package nftables

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nltest"
	"golang.org/x/sys/unix"
)

// generation returns the nftables ruleset generation of the namespace: the
// kernel increments it with every committed transaction, whoever sends it.
// google/nftables v0.3.0 has no call for NFT_MSG_GETGEN, so it is sent here.
func (p *Programmer) generation() (uint32, error) {
	conn, err := p.dialGeneration()
	if err != nil {
		return 0, err
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

// dialGeneration opens a netfilter socket in the namespace, or one to the
// recorder that stands in for the kernel in tests.
func (p *Programmer) dialGeneration() (*netlink.Conn, error) {
	if p.testDial != nil {
		return nltest.Dial(p.testDial), nil
	}
	cfg := &netlink.Config{}
	if p.nsPath != "" {
		f, err := os.Open(p.nsPath)
		if err != nil {
			return nil, fmt.Errorf("opening network namespace: %w", err)
		}
		defer func() { _ = f.Close() }()
		cfg.NetNS = int(f.Fd())
	}
	conn, err := netlink.Dial(unix.NETLINK_NETFILTER, cfg)
	if err != nil {
		return nil, fmt.Errorf("dialing netfilter netlink: %w", err)
	}
	return conn, nil
}
