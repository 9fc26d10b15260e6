package nftables_test

import (
	"encoding/binary"
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nltest"
	"golang.org/x/sys/unix"
)

// fakeKernel stands in for the kernel's nftables behind google/nftables'
// test dial, so the Programmer runs without root. It records every request,
// commits a batch as one transaction or refuses it whole, answers the dumps
// the Programmer reads back with what was committed (in the messages that
// created it, which is the kernel's format too), and counts the generation.
// It knows what the Programmer sends, not all of nftables.
type fakeKernel struct {
	requests []netlink.Message
	gen      uint32
	tables   map[string]*fakeTable
	// refuse makes the kernel refuse the next batch with this errno, as it
	// refuses a batch with an invalid rule or a missing element.
	refuse unix.Errno
}

type fakeTable struct {
	table  netlink.Message
	chains []netlink.Message
	rules  map[string][]netlink.Message // by chain
	sets   []netlink.Message
	elems  map[string]map[string]string // by set: the encoded elements by their key, as the kernel tells them apart
}

func newFakeKernel() *fakeKernel { return &fakeKernel{tables: map[string]*fakeTable{}} }

// dial is the nltest.Func: every request the Programmer sends comes here.
func (k *fakeKernel) dial(req []netlink.Message) ([]netlink.Message, error) {
	if len(req) == 0 {
		return nil, nil // a further read for acknowledgements already sent
	}
	k.requests = append(k.requests, req...)
	if req[0].Header.Type == netlink.HeaderType(unix.NFNL_MSG_BATCH_BEGIN) {
		return k.commit(req[1 : len(req)-1])
	}
	m := req[0]
	var out []netlink.Message
	switch opOf(m) {
	case unix.NFT_MSG_GETGEN:
		out = []netlink.Message{{
			Header: netlink.Header{Type: nftType(unix.NFT_MSG_NEWGEN)},
			Data:   append([]byte{unix.AF_UNSPEC, unix.NFNETLINK_V0, 0, 0}, attrs(netlink.Attribute{Type: unix.NFTA_GEN_ID, Data: be32(k.gen)})...),
		}}
	case unix.NFT_MSG_GETTABLE:
		for _, name := range slices.Sorted(maps.Keys(k.tables)) {
			out = append(out, k.tables[name].table)
		}
	case unix.NFT_MSG_GETCHAIN:
		for _, name := range slices.Sorted(maps.Keys(k.tables)) {
			out = append(out, k.tables[name].chains...)
		}
	case unix.NFT_MSG_GETSET:
		if t := k.tables[attrString(m, unix.NFTA_SET_TABLE)]; t != nil {
			out = t.sets
		}
	case unix.NFT_MSG_GETRULE:
		if t := k.tables[attrString(m, unix.NFTA_RULE_TABLE)]; t != nil {
			out = t.rules[attrString(m, unix.NFTA_RULE_CHAIN)]
		}
	case unix.NFT_MSG_GETSETELEM:
		table, set := attrString(m, unix.NFTA_SET_ELEM_LIST_TABLE), attrString(m, unix.NFTA_SET_ELEM_LIST_SET)
		if t := k.tables[table]; t != nil {
			// In messages of a few hundred elements, as the kernel's
			// dump: an attribute's length is 16 bits wide.
			for chunk := range slices.Chunk(slices.Sorted(maps.Keys(t.elems[set])), 256) {
				var items []netlink.Attribute
				for _, e := range chunk {
					items = append(items, netlink.Attribute{Type: unix.NLA_F_NESTED | unix.NFTA_LIST_ELEM, Data: []byte(t.elems[set][e])})
				}
				out = append(out, netlink.Message{
					Header: netlink.Header{Type: nftType(unix.NFT_MSG_NEWSETELEM)},
					Data: append([]byte{m.Data[0], unix.NFNETLINK_V0, 0, 0}, attrs(
						netlink.Attribute{Type: unix.NFTA_SET_ELEM_LIST_TABLE, Data: cstring(table)},
						netlink.Attribute{Type: unix.NFTA_SET_ELEM_LIST_SET, Data: cstring(set)},
						netlink.Attribute{Type: unix.NLA_F_NESTED | unix.NFTA_SET_ELEM_LIST_ELEMENTS, Data: attrs(items...)},
					)...),
				})
			}
		}
	default:
		return nltest.Error(int(unix.EOPNOTSUPP), req)
	}
	return replies(m, out), nil
}

// commit applies a batch to a copy and keeps it only if every message was
// valid, acknowledging each; otherwise it answers with one error, as the
// kernel does, and keeps what it had.
func (k *fakeKernel) commit(msgs []netlink.Message) ([]netlink.Message, error) {
	next := map[string]*fakeTable{}
	for name, t := range k.tables {
		next[name] = t.clone()
	}
	for _, m := range msgs {
		errno := apply(next, m)
		if errno == 0 && k.refuse != 0 {
			errno, k.refuse = k.refuse, 0
		}
		if errno != 0 {
			return nltest.Error(int(errno), []netlink.Message{m})
		}
	}
	k.tables = next
	k.gen++
	var acks []netlink.Message
	for _, m := range msgs {
		if m.Header.Flags&netlink.Acknowledge != 0 {
			acks = append(acks, netlink.Message{
				Header: netlink.Header{Type: netlink.Error, Sequence: m.Header.Sequence, PID: m.Header.PID},
				Data:   []byte{0, 0, 0, 0},
			})
		}
	}
	return acks, nil
}

// apply makes the change of one message, or says why the kernel would not.
func apply(tables map[string]*fakeTable, m netlink.Message) unix.Errno {
	switch opOf(m) {
	case unix.NFT_MSG_NEWTABLE:
		name := attrString(m, unix.NFTA_TABLE_NAME)
		if tables[name] == nil {
			tables[name] = &fakeTable{table: m, rules: map[string][]netlink.Message{}, elems: map[string]map[string]string{}}
		}
		return 0
	case unix.NFT_MSG_DELTABLE:
		name := attrString(m, unix.NFTA_TABLE_NAME)
		if tables[name] == nil {
			return unix.ENOENT
		}
		delete(tables, name)
		return 0
	}
	switch opOf(m) {
	case unix.NFT_MSG_NEWCHAIN:
		t := tables[attrString(m, unix.NFTA_CHAIN_TABLE)]
		if t == nil {
			return unix.ENOENT
		}
		t.chains = append(t.chains, m)
	case unix.NFT_MSG_NEWSET:
		t := tables[attrString(m, unix.NFTA_SET_TABLE)]
		if t == nil {
			return unix.ENOENT
		}
		t.sets = append(t.sets, m)
		t.elems[attrString(m, unix.NFTA_SET_NAME)] = map[string]string{}
	case unix.NFT_MSG_NEWRULE:
		t := tables[attrString(m, unix.NFTA_RULE_TABLE)]
		chain := attrString(m, unix.NFTA_RULE_CHAIN)
		if t == nil || !slices.ContainsFunc(t.chains, func(c netlink.Message) bool { return attrString(c, unix.NFTA_CHAIN_NAME) == chain }) {
			return unix.ENOENT
		}
		t.rules[chain] = append(t.rules[chain], m)
	case unix.NFT_MSG_NEWSETELEM, unix.NFT_MSG_DELSETELEM:
		t := tables[attrString(m, unix.NFTA_SET_ELEM_LIST_TABLE)]
		if t == nil {
			return unix.ENOENT
		}
		set := t.elems[attrString(m, unix.NFTA_SET_ELEM_LIST_SET)]
		if set == nil {
			return unix.ENOENT
		}
		for _, item := range listItems(m) {
			id := elemID(item)
			if opOf(m) == unix.NFT_MSG_NEWSETELEM {
				if _, ok := set[id]; !ok {
					set[id] = string(item)
				}
				continue
			}
			if _, ok := set[id]; !ok {
				return unix.ENOENT
			}
			delete(set, id)
		}
	default:
		return unix.EOPNOTSUPP
	}
	return 0
}

// elemID is what tells elements apart in a set: key, key end and flags, not
// timeout or comment. An add of an element the set holds changes nothing (a
// kernel before 6.10 keeps its timeout too).
func elemID(item []byte) string {
	e := decodeItem(item)
	return fmt.Sprintf("%x-%x-%t", e.Key, e.KeyEnd, e.IntervalEnd)
}

// elements returns the addresses in an FQDN set, sorted.
func (k *fakeKernel) addresses(table, set string) []string {
	var out []string
	if t := k.tables[table]; t != nil {
		for _, e := range t.elems[set] {
			if a, ok := netip.AddrFromSlice(decodeItem([]byte(e)).Key); ok {
				out = append(out, a.String())
			}
		}
	}
	slices.Sort(out)
	return out
}

func (t *fakeTable) clone() *fakeTable {
	c := &fakeTable{table: t.table, chains: slices.Clone(t.chains), sets: slices.Clone(t.sets),
		rules: map[string][]netlink.Message{}, elems: map[string]map[string]string{}}
	for k, v := range t.rules {
		c.rules[k] = slices.Clone(v)
	}
	for k, v := range t.elems {
		c.elems[k] = maps.Clone(v)
	}
	return c
}

// elementCount is the number of kernel elements in all sets of table.
func (k *fakeKernel) elementCount(table string) int {
	n := 0
	if t := k.tables[table]; t != nil {
		for _, s := range t.elems {
			n += len(s)
		}
	}
	return n
}

// deleteElement removes one element of set behind the Programmer's back, as
// another process would, and counts a generation.
func (k *fakeKernel) deleteElement(table, set string, match func(setElem) bool) bool {
	for id, e := range k.tables[table].elems[set] {
		if match(decodeItem([]byte(e))) {
			delete(k.tables[table].elems[set], id)
			k.gen++
			return true
		}
	}
	return false
}

// replies addresses answers to the request, as the kernel does.
func replies(req netlink.Message, out []netlink.Message) []netlink.Message {
	res := make([]netlink.Message, len(out))
	for i, m := range out {
		m.Header.Sequence, m.Header.PID, m.Header.Flags = req.Header.Sequence, req.Header.PID, 0
		res[i] = m
	}
	return res
}

func nftType(op int) netlink.HeaderType { return netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | op) }

func attrs(as ...netlink.Attribute) []byte {
	b, err := netlink.MarshalAttributes(as)
	if err != nil {
		panic(err)
	}
	return b
}

func cstring(s string) []byte { return append([]byte(s), 0) }

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
