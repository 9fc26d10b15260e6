package nftables

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/userdata"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// FQDNElement is an address the DNS proxy allows in one FQDN set, for
// Timeout from now, or, with Delete, no longer allows.
type FQDNElement struct {
	Set  string
	Addr netip.Addr
	// Timeout is how long the address stays; the kernel removes it then.
	Timeout time.Duration
	// Refresh tells that the set holds the address already: its timeout is
	// replaced (a delete and an add in one transaction, which every kernel
	// honours; an add alone leaves the old timeout on kernels before 6.10).
	Refresh bool
	// Comment is kept with the element: the names it was allowed for, so
	// that a restarted agent knows which selectors allowed it.
	Comment string
	// Delete removes the address from the set; whether the set still holds
	// it or not (it may have expired meanwhile).
	Delete bool
}

// FQDNSetContent is an FQDN set as the kernel holds it.
type FQDNSetContent struct {
	Name string
	V6   bool
	// Comment is the set's comment: its selector's key.
	Comment  string
	Elements []FQDNElement
}

// UpdateFQDN adds (and deletes) elements of FQDN sets in one transaction and
// returns once the kernel committed them: the DNS proxy releases an answer
// only then.
// Elements of sets that the last Apply did not create are left out and
// counted in skipped (a selector just removed, or not yet applied). If the
// transaction fails because a refreshed address has gone meanwhile (expired,
// or deleted by someone), it is sent again with adds only.
func (p *Programmer) UpdateFQDN(elems []FQDNElement) (skipped int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var todo []FQDNElement
	for _, e := range elems {
		if p.fqdnSets[e.Set] {
			todo = append(todo, e)
		} else {
			skipped++
		}
	}
	if len(todo) == 0 {
		return skipped, nil
	}
	err = p.sendFQDN(todo, true)
	if err != nil {
		err = p.sendFQDN(todo, false)
	}
	if err != nil {
		return skipped, fmt.Errorf("adding %d addresses to FQDN sets: %w", len(todo), err)
	}
	return skipped, nil
}

func (p *Programmer) sendFQDN(elems []FQDNElement, refresh bool) error {
	if p.fqdnConn == nil {
		c, err := p.open()
		if err != nil {
			return err
		}
		p.fqdnConn = c
	}
	c := p.fqdnConn
	table := &nftables.Table{Name: ruleset.TableName, Family: nftables.TableFamilyINet}
	type batch struct {
		set      *nftables.Set
		del, add []nftables.SetElement
		// del2 goes after the adds: the deletes of Delete elements.
		del2 []nftables.SetElement
	}
	var order []string
	batches := map[string]*batch{}
	for _, e := range elems {
		b := batches[e.Set]
		if b == nil {
			key := nftables.TypeIPAddr
			if e.Addr.Is6() {
				key = nftables.TypeIP6Addr
			}
			b = &batch{set: &nftables.Set{Table: table, Name: e.Set, KeyType: key, HasTimeout: true}}
			batches[e.Set] = b
			order = append(order, e.Set)
		}
		el := nftables.SetElement{Key: e.Addr.AsSlice(), Timeout: max(e.Timeout, time.Millisecond), Comment: e.Comment}
		if e.Delete {
			// Added first, with a short timeout, so that the delete cannot
			// fail on an element that expired meanwhile: an add of an element
			// the set holds is no error, a delete of one it lacks is.
			b.add = append(b.add, nftables.SetElement{Key: el.Key, Timeout: time.Second})
			b.del2 = append(b.del2, nftables.SetElement{Key: el.Key})
			continue
		}
		if refresh && e.Refresh {
			b.del = append(b.del, nftables.SetElement{Key: el.Key})
		}
		b.add = append(b.add, el)
	}
	for _, name := range order {
		b := batches[name]
		if err := deleteChunked(c, b.set, b.del); err != nil {
			return err
		}
		if err := addChunked(c, b.set, b.add); err != nil {
			return err
		}
		if err := deleteChunked(c, b.set, b.del2); err != nil {
			return err
		}
	}
	if err := c.Flush(); err != nil {
		_ = c.CloseLasting()
		p.fqdnConn = nil
		return err
	}
	return nil
}

// ReadFQDNSets returns the FQDN sets of the agent's table with their
// elements and the time each has left: what the DNS proxy starts from after
// a restart. Until the first Apply, UpdateFQDN writes to these sets.
func (p *Programmer) ReadFQDNSets() ([]FQDNSetContent, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	conn, err := p.open()
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.CloseLasting() }()
	table := &nftables.Table{Name: ruleset.TableName, Family: nftables.TableFamilyINet}
	sets, err := fqdnSetsOf(conn, table)
	if err != nil {
		return nil, err
	}
	if len(sets) == 0 {
		return nil, nil
	}
	comments, err := p.setComments(table.Name)
	if err != nil {
		return nil, err
	}
	var out []FQDNSetContent
	for _, s := range sets {
		s.Comment = comments[s.Name]
		elems, err := conn.GetSetElements(s)
		if err != nil {
			return nil, fmt.Errorf("listing elements of set %s: %w", s.Name, err)
		}
		content := FQDNSetContent{Name: s.Name, V6: s.KeyType.Bytes == 16, Comment: s.Comment}
		for _, el := range elems {
			addr, ok := netip.AddrFromSlice(el.Key)
			if !ok {
				continue
			}
			content.Elements = append(content.Elements, FQDNElement{Set: s.Name, Addr: addr, Timeout: el.Expires, Comment: el.Comment})
		}
		out = append(out, content)
	}
	if p.fqdnSets == nil {
		p.fqdnSets = map[string]bool{}
		for _, s := range out {
			p.fqdnSets[s.Name] = true
		}
	}
	return out, nil
}

// fqdnSetsOf returns the FQDN sets of the table: timeout sets named fqdn_;
// none when the table does not exist.
func fqdnSetsOf(conn *nftables.Conn, table *nftables.Table) ([]*nftables.Set, error) {
	tables, err := conn.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return nil, fmt.Errorf("listing tables: %w", err)
	}
	found := false
	for _, t := range tables {
		found = found || t.Name == table.Name
	}
	if !found {
		return nil, nil
	}
	sets, err := conn.GetSets(table)
	if err != nil {
		return nil, fmt.Errorf("listing sets: %w", err)
	}
	var out []*nftables.Set
	for _, s := range sets {
		if s.HasTimeout && strings.HasPrefix(s.Name, "fqdn_") {
			out = append(out, s)
		}
	}
	return out, nil
}

// fqdnElements reads, for a table replacement, the elements of the FQDN
// sets that rs keeps, as elements to add again with the time they have left.
func fqdnElements(conn *nftables.Conn, table *nftables.Table, rs *ruleset.Ruleset) (map[string][]nftables.SetElement, error) {
	keep := map[string]bool{}
	for _, s := range rs.Sets {
		if s.Kind == ruleset.FQDNSet {
			keep[s.Name] = true
		}
	}
	if len(keep) == 0 {
		return nil, nil
	}
	sets, err := fqdnSetsOf(conn, table)
	if err != nil {
		return nil, err
	}
	out := map[string][]nftables.SetElement{}
	for _, s := range sets {
		if !keep[s.Name] {
			continue
		}
		elems, err := conn.GetSetElements(s)
		if err != nil {
			return nil, fmt.Errorf("listing elements of set %s: %w", s.Name, err)
		}
		for _, el := range elems {
			if el.Timeout > 0 && el.Expires <= 0 {
				continue // expired, not yet collected
			}
			out[s.Name] = append(out[s.Name], nftables.SetElement{Key: el.Key, Timeout: el.Expires, Comment: el.Comment})
		}
	}
	return out, nil
}

// addChunked queues raw elements in chunks that fit one netlink message.
func addChunked(c *nftables.Conn, s *nftables.Set, elems []nftables.SetElement) error {
	for len(elems) > 0 {
		n := min(len(elems), ElementsPerMessage)
		if err := c.SetAddElements(s, elems[:n]); err != nil {
			return err
		}
		elems = elems[n:]
	}
	return nil
}

// deleteChunked queues the removal of raw elements in chunks.
func deleteChunked(c *nftables.Conn, s *nftables.Set, elems []nftables.SetElement) error {
	for len(elems) > 0 {
		n := min(len(elems), ElementsPerMessage)
		if err := c.SetDeleteElements(s, elems[:n]); err != nil {
			return err
		}
		elems = elems[n:]
	}
	return nil
}

// setComments returns the comments of the table's sets by set name.
// google/nftables v0.3.0 writes a set's comment but does not read it back,
// so the sets are listed here.
func (p *Programmer) setComments(table string) (map[string]string, error) {
	conn, err := p.dialGeneration()
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	attrs, err := netlink.MarshalAttributes([]netlink.Attribute{{Type: unix.NFTA_SET_TABLE, Data: append([]byte(table), 0)}})
	if err != nil {
		return nil, err
	}
	msgs, err := conn.Execute(netlink.Message{
		Header: netlink.Header{
			Type:  netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_GETSET),
			Flags: netlink.Request | netlink.Dump,
		},
		// struct nfgenmsg: family, version, resource id.
		Data: append([]byte{unix.NFPROTO_INET, unix.NFNETLINK_V0, 0, 0}, attrs...),
	})
	if err != nil {
		return nil, fmt.Errorf("listing set comments: %w", err)
	}
	out := map[string]string{}
	for _, m := range msgs {
		if len(m.Data) < 4 {
			continue
		}
		ad, err := netlink.NewAttributeDecoder(m.Data[4:])
		if err != nil {
			return nil, err
		}
		var name, comment string
		for ad.Next() {
			switch ad.Type() {
			case unix.NFTA_SET_NAME:
				name = ad.String()
			case unix.NFTA_SET_USERDATA:
				comment, _ = userdata.GetString(ad.Bytes(), userdata.NFTNL_UDATA_SET_COMMENT)
			}
		}
		if name != "" && comment != "" {
			out[name] = comment
		}
	}
	return out, nil
}
