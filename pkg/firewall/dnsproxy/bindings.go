package dnsproxy

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/fqdn"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// maxCommentNames bounds the names read from one element's comment.
const maxCommentNames = 64

// setSelectors makes bindings the selectors the proxy enforces and the sets
// their addresses go to, keeping what was allowed for the selectors that
// stay. Nothing but elements changes in the kernel, through write: the
// addresses that no selector bound to a set allows any more are deleted
// from it (those of a removed selector that no other selector of its port
// list allowed too), an address whose owners allow it for a shorter time is
// given that time, and a selector's addresses go into a set it is newly
// bound to. A selector newly bound to a set first takes over the set's
// elements whose names it matches (what it allowed before a restart, or
// what another selector of the set allowed for a name it matches), and
// those of the sets the ruleset no longer has, which went with the table
// (an agent before shared sets had a set per selector). If write
// fails, the state stays as the kernel has it and the next call retries.
func (a *allowed) setSelectors(bindings []ruleset.FQDNBinding, now time.Time, write func([]nftables.FQDNElement) error) error {
	a.write.Lock()
	defer a.write.Unlock()
	a.mu.Lock()
	old := map[fqdn.Selector]*selectorState{}
	for _, s := range a.sels {
		old[s.sel] = s
	}
	sets := map[string]*setState{}
	sels := make([]fqdn.Selector, len(bindings))
	a.sels, a.total = make([]*selectorState, len(bindings)), 0
	fresh := map[*setState][]*selectorState{}
	for i, b := range bindings {
		st := old[b.Selector]
		if st == nil {
			st = newSelectorState(b.Selector)
		}
		delete(old, b.Selector)
		bound := make([]*setState, 0, len(b.Sets))
		for _, base := range b.Sets {
			set := sets[base]
			if set == nil {
				set = a.sets[base]
				if set == nil {
					set = newSetState(base)
				}
				sets[base] = set
			}
			if !st.boundTo(set) {
				fresh[set] = append(fresh[set], st)
			}
			bound = append(bound, set)
		}
		st.sets = bound
		sels[i], a.sels[i] = b.Selector, st
	}
	for _, st := range old {
		st.gone, st.sets = true, nil
	}
	// The elements of the sets that went with the table: a selector that
	// moved to another port list (or a set per selector, before an upgrade)
	// takes them along into its new sets.
	orphans := map[netip.Addr]*elemState{}
	for base, set := range a.sets {
		if sets[base] == nil {
			maps.Copy(orphans, set.elems)
		}
	}
	a.sets = sets
	a.matcher = fqdn.NewMatcher(sels)
	for set, newcomers := range fresh {
		adopt(newcomers, now, set.elems, orphans)
	}
	for _, st := range a.sels {
		a.total += len(st.addrs)
	}
	a.mu.Unlock()
	// Read only: answers that need no set update go on meanwhile (the
	// agent calls this on every apply, with thousands of addresses).
	a.mu.RLock()
	elems, next := a.reconcile(now)
	a.mu.RUnlock()
	if len(elems) == 0 {
		return nil
	}
	if err := write(elems); err != nil {
		return fmt.Errorf("changing %d elements of the FQDN sets: %w", len(elems), err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range next {
		if c.el == nil {
			delete(c.set.elems, c.addr)
		} else {
			c.set.elems[c.addr] = c.el
		}
	}
	return nil
}

// adopt gives newcomers, selectors just bound to a set, the elements of
// the set and of the sets gone whose names they match, with the time the
// element has left.
func adopt(newcomers []*selectorState, now time.Time, from ...map[netip.Addr]*elemState) {
	sels := make([]fqdn.Selector, len(newcomers))
	for i, st := range newcomers {
		sels[i] = st.sel
	}
	var m *fqdn.Matcher
	var idx []int
	for _, elems := range from {
		if len(elems) > 0 && m == nil {
			m = fqdn.NewMatcher(sels)
		}
		for addr, el := range elems {
			if !el.expires.After(now) {
				continue
			}
			for _, name := range el.names {
				idx = m.Match(name, idx[:0])
				for _, i := range idx {
					st := newcomers[i]
					if cur := st.addrs[addr]; cur == nil || cur.expires.Before(el.expires) {
						st.put(addr, name, el.expires)
					}
				}
			}
		}
	}
}

// elemChange is an element as the kernel holds it after a write; el nil
// for one deleted.
type elemChange struct {
	set  *setState
	addr netip.Addr
	el   *elemState
}

// reconcile returns the element writes that make each set hold what its
// selectors allow: per address the latest expiry among them. Called with
// mu held for reading, and write.
func (a *allowed) reconcile(now time.Time) ([]nftables.FQDNElement, []elemChange) {
	type owned struct {
		expires time.Time
		names   []string
	}
	want := map[*setState]map[netip.Addr]*owned{}
	for _, st := range a.sels {
		for _, set := range st.sets {
			w := want[set]
			if w == nil {
				w = map[netip.Addr]*owned{}
				want[set] = w
			}
			for addr, s := range st.addrs {
				if !s.expires.After(now) {
					continue
				}
				o := w[addr]
				if o == nil {
					o = &owned{}
					w[addr] = o
				}
				if s.expires.After(o.expires) {
					o.expires = s.expires
				}
				if !slices.Contains(o.names, s.name) && len(o.names) < maxCommentNames {
					o.names = append(o.names, s.name)
				}
			}
		}
	}
	var (
		elems []nftables.FQDNElement
		next  []elemChange
	)
	for _, set := range a.sets {
		w := want[set]
		for addr, el := range set.elems {
			o := w[addr]
			switch {
			case o == nil:
				elems = append(elems, nftables.FQDNElement{Set: ruleset.FQDNSetName(set.base, addr.Is6()), Addr: addr, Delete: true})
				next = append(next, elemChange{set, addr, nil})
			case el.expires.After(o.expires.Add(2 * time.Second)):
				// The owner that allowed it longest is gone: the others'
				// time, no more.
				shorter := &elemState{expires: o.expires, names: el.names}
				elems = append(elems, nftables.FQDNElement{Set: ruleset.FQDNSetName(set.base, addr.Is6()), Addr: addr,
					Timeout: o.expires.Sub(now), Refresh: true, Comment: commentOf(el.names)})
				next = append(next, elemChange{set, addr, shorter})
			}
		}
		for addr, o := range w {
			if el := set.elems[addr]; el != nil && el.expires.After(now) {
				continue
			}
			names := mergeNames(o.names, nil)
			elems = append(elems, nftables.FQDNElement{Set: ruleset.FQDNSetName(set.base, addr.Is6()), Addr: addr,
				Timeout: o.expires.Sub(now), Comment: commentOf(names)})
			next = append(next, elemChange{set, addr, &elemState{expires: o.expires, names: names}})
		}
	}
	return elems, next
}

// restore takes what the kernel's FQDN sets hold, after a restart. The
// selectors are not in the kernel, but each element's comment names what it
// was allowed for: until the first setSelectors, the proxy enforces those
// names as selectors of the sets that hold them (a name that only a
// pattern will match waits for that). setSelectors then gives each element
// to the selectors that match its names, and deletes those nobody claims.
func (a *allowed) restore(contents []nftables.FQDNSetContent, now time.Time) {
	sets := map[string]*setState{}
	byName := map[string]*selectorState{}
	var sels []fqdn.Selector
	for _, c := range contents {
		base, v6, ok := ruleset.FQDNSetBase(c.Name)
		if !ok || v6 != c.V6 {
			continue // not ours to interpret
		}
		set := sets[base]
		if set == nil {
			set = newSetState(base)
			sets[base] = set
		}
		for _, e := range c.Elements {
			if e.Timeout <= 0 || e.Addr.Is6() != v6 {
				continue
			}
			expires := now.Add(e.Timeout)
			el := &elemState{expires: expires}
			for _, text := range strings.Fields(e.Comment) {
				name, ok := fqdn.CanonicalName(text)
				if !ok || slices.Contains(el.names, name) || len(el.names) == maxCommentNames {
					continue
				}
				el.names = append(el.names, name)
				st := byName[name]
				if st == nil {
					sel := fqdn.Selector{Name: name}
					st = newSelectorState(sel)
					byName[name] = st
					sels = append(sels, sel)
				}
				if !st.boundTo(set) {
					st.sets = append(st.sets, set)
				}
				st.put(e.Addr, name, expires)
			}
			set.elems[e.Addr] = el
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, st := range a.sels {
		st.gone = true
	}
	a.sels, a.total, a.sets = make([]*selectorState, len(sels)), 0, sets
	for i, sel := range sels {
		a.sels[i] = byName[sel.Name]
		a.total += len(a.sels[i].addrs)
	}
	a.matcher = fqdn.NewMatcher(sels)
}

func (s *selectorState) put(addr netip.Addr, name string, expires time.Time) (added bool) {
	st := s.addrs[addr]
	if st == nil {
		st = &addrState{}
		s.addrs[addr] = st
		added = true
	} else if st.name != name {
		s.names[st.name]--
		if s.names[st.name] <= 0 {
			delete(s.names, st.name)
		}
	}
	st.expires, st.name = expires, name
	s.names[name]++
	return added
}

func (s *selectorState) remove(addr netip.Addr) {
	st := s.addrs[addr]
	if st == nil {
		return
	}
	delete(s.addrs, addr)
	s.names[st.name]--
	if s.names[st.name] <= 0 {
		delete(s.names, st.name)
	}
}
