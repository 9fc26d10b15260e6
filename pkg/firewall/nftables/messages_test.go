package nftables_test

import (
	"encoding/binary"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/userdata"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// op is a recorded netlink request as the specs read it: what it does to
// which object, not its bytes.
type op struct {
	Op string // e.g. NEWTABLE, DELSETELEM, GETRULE, BATCH_BEGIN
	// Table the object belongs to; Name the chain, set, or, for a rule,
	// its chain.
	Table, Name string
	Elements    []setElem // NEWSETELEM, DELSETELEM
	Comment     string    // NEWRULE
	DataLen     int       // bytes after the netlink header
}

// setElem is one kernel set element.
type setElem struct {
	Key, KeyEnd []byte
	IntervalEnd bool
}

var opNames = map[int]string{
	unix.NFT_MSG_NEWTABLE: "NEWTABLE", unix.NFT_MSG_DELTABLE: "DELTABLE", unix.NFT_MSG_GETTABLE: "GETTABLE",
	unix.NFT_MSG_NEWCHAIN: "NEWCHAIN", unix.NFT_MSG_DELCHAIN: "DELCHAIN", unix.NFT_MSG_GETCHAIN: "GETCHAIN",
	unix.NFT_MSG_NEWRULE: "NEWRULE", unix.NFT_MSG_DELRULE: "DELRULE", unix.NFT_MSG_GETRULE: "GETRULE",
	unix.NFT_MSG_NEWSET: "NEWSET", unix.NFT_MSG_DELSET: "DELSET", unix.NFT_MSG_GETSET: "GETSET",
	unix.NFT_MSG_NEWSETELEM: "NEWSETELEM", unix.NFT_MSG_DELSETELEM: "DELSETELEM", unix.NFT_MSG_GETSETELEM: "GETSETELEM",
	unix.NFT_MSG_GETGEN: "GETGEN",
}

func opOf(m netlink.Message) int { return int(m.Header.Type) & 0xff }

func decodeOp(m netlink.Message) op {
	switch m.Header.Type {
	case netlink.HeaderType(unix.NFNL_MSG_BATCH_BEGIN):
		return op{Op: "BATCH_BEGIN"}
	case netlink.HeaderType(unix.NFNL_MSG_BATCH_END):
		return op{Op: "BATCH_END"}
	}
	o := op{Op: opNames[opOf(m)], DataLen: len(m.Data)}
	if o.Op == "" {
		o.Op = "unknown"
	}
	switch opOf(m) {
	case unix.NFT_MSG_NEWTABLE, unix.NFT_MSG_DELTABLE:
		o.Table = attrString(m, unix.NFTA_TABLE_NAME)
	case unix.NFT_MSG_NEWCHAIN, unix.NFT_MSG_DELCHAIN:
		o.Table, o.Name = attrString(m, unix.NFTA_CHAIN_TABLE), attrString(m, unix.NFTA_CHAIN_NAME)
	case unix.NFT_MSG_NEWSET, unix.NFT_MSG_DELSET, unix.NFT_MSG_GETSET:
		o.Table, o.Name = attrString(m, unix.NFTA_SET_TABLE), attrString(m, unix.NFTA_SET_NAME)
	case unix.NFT_MSG_NEWRULE, unix.NFT_MSG_DELRULE, unix.NFT_MSG_GETRULE:
		o.Table, o.Name = attrString(m, unix.NFTA_RULE_TABLE), attrString(m, unix.NFTA_RULE_CHAIN)
		o.Comment, _ = userdata.GetString(attrBytes(m, unix.NFTA_RULE_USERDATA), userdata.TypeComment)
	case unix.NFT_MSG_NEWSETELEM, unix.NFT_MSG_DELSETELEM, unix.NFT_MSG_GETSETELEM:
		o.Table, o.Name = attrString(m, unix.NFTA_SET_ELEM_LIST_TABLE), attrString(m, unix.NFTA_SET_ELEM_LIST_SET)
		for _, item := range listItems(m) {
			o.Elements = append(o.Elements, decodeItem(item))
		}
	}
	return o
}

// attrBytes returns the top-level attribute typ of an nftables message.
func attrBytes(m netlink.Message, typ uint16) []byte {
	if len(m.Data) < 4 {
		return nil
	}
	ad, err := netlink.NewAttributeDecoder(m.Data[4:])
	if err != nil {
		return nil
	}
	for ad.Next() {
		if ad.Type() == typ {
			return ad.Bytes()
		}
	}
	return nil
}

func attrString(m netlink.Message, typ uint16) string {
	b := attrBytes(m, typ)
	if n := len(b); n > 0 && b[n-1] == 0 {
		b = b[:n-1]
	}
	return string(b)
}

// listItems returns the encoded elements of a set element message.
func listItems(m netlink.Message) [][]byte {
	ad, err := netlink.NewAttributeDecoder(attrBytes(m, unix.NFTA_SET_ELEM_LIST_ELEMENTS))
	if err != nil {
		return nil
	}
	var out [][]byte
	for ad.Next() {
		out = append(out, ad.Bytes())
	}
	return out
}

func decodeItem(item []byte) setElem {
	var e setElem
	ad, err := netlink.NewAttributeDecoder(item)
	if err != nil {
		return e
	}
	value := func(b []byte) []byte {
		inner, err := netlink.NewAttributeDecoder(b)
		if err != nil {
			return nil
		}
		for inner.Next() {
			if inner.Type() == unix.NFTA_DATA_VALUE {
				return inner.Bytes()
			}
		}
		return nil
	}
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_SET_ELEM_KEY:
			e.Key = value(ad.Bytes())
		case nftables.NFTA_SET_ELEM_KEY_END:
			e.KeyEnd = value(ad.Bytes())
		case unix.NFTA_SET_ELEM_FLAGS:
			e.IntervalEnd = binary.BigEndian.Uint32(ad.Bytes())&unix.NFT_SET_ELEM_INTERVAL_END != 0
		}
	}
	return e
}

// concat is the kernel's key for addr . proto . port: each field padded
// to 4 bytes, in network byte order.
func concat(addr string, proto uint8, port uint16) []byte {
	key := netip.MustParseAddr(addr).AsSlice()
	key = append(key, proto, 0, 0, 0)
	key = binary.BigEndian.AppendUint16(key, port)
	return append(key, 0, 0)
}

// ops decodes the requests recorded since the last call to reset.
func (k *fakeKernel) ops() []op {
	out := make([]op, len(k.requests))
	for i, m := range k.requests {
		out[i] = decodeOp(m)
	}
	return out
}

func (k *fakeKernel) reset() { k.requests = nil }

// batches returns the recorded batches, each the ops between BATCH_BEGIN and
// BATCH_END.
func (k *fakeKernel) batches() [][]op {
	var out [][]op
	var cur []op
	in := false
	for _, o := range k.ops() {
		switch {
		case o.Op == "BATCH_BEGIN":
			in, cur = true, []op{}
		case o.Op == "BATCH_END":
			in, out = false, append(out, cur)
		case in:
			cur = append(cur, o)
		}
	}
	return out
}

// reads returns the names of the requests sent outside batches.
func (k *fakeKernel) reads() []string {
	var out []string
	in := false
	for _, o := range k.ops() {
		switch {
		case o.Op == "BATCH_BEGIN":
			in = true
		case o.Op == "BATCH_END":
			in = false
		case !in:
			out = append(out, o.Op)
		}
	}
	return out
}

func opNamesOf(ops []op) []string {
	out := make([]string, len(ops))
	for i, o := range ops {
		out[i] = o.Op
	}
	return out
}
