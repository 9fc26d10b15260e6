package dnsproxy

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/fqdn"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// maxTTL caps a record's TTL, as resolvers do (a day): a huge TTL from a
// hostile answer must not allow an address for years.
const maxTTL = 24 * time.Hour

// refreshSlack is how much sooner than max(TTL, floor) + grace an allowed
// address may expire before a repeated answer refreshes it: half the grace.
// An address so stays allowed for at least its answer's TTL and half the
// grace, and a name asked a thousand times a second costs a set update once
// per half grace, not a thousand a second (a resolver that answers with the
// full TTL every time, as an authoritative one does, moves the wanted
// expiry with the clock).
func refreshSlack(grace time.Duration) time.Duration { return grace / 2 }

// Bounds keep what the proxy allows, and so its and the kernel's memory,
// in check; each is reported when hit.
type Bounds struct {
	AddressesPerName int
	NamesPerSelector int
	Addresses        int
}

// Bound names, as metrics and status messages name them.
const (
	BoundAddressesPerName = "maxAddressesPerName"
	BoundNamesPerSelector = "maxNamesPerSelector"
	BoundAddresses        = "maxAddresses"
)

// boundMemory is how long a selector's status tells that it hit a bound.
const boundMemory = 10 * time.Minute

// found is an address in an answer: name owns it, selectors allow it.
type found struct {
	name      string
	addr      netip.Addr
	ttl       time.Duration
	selectors []*selectorState
}

// allowed is what the proxy has allowed, per selector: the addresses with
// the time they expire (as in the kernel), and by which name. Readers ask
// whether an answer needs a set update. State changes only once the kernel
// has the update, so nobody releases an answer for an address whose update
// is still in flight: a reader that does not find it fresh becomes a writer
// and waits for the write in flight. Writers take turns (write); mu is held
// for reading and changing the state only, never across the kernel's
// update, so answers that need none are not held up by one that does.
type allowed struct {
	write   sync.Mutex
	mu      sync.RWMutex
	matcher *fqdn.Matcher
	sels    []*selectorState
	total   int
}

type selectorState struct {
	sel fqdn.Selector
	// gone tells that the selector is no longer enforced: what was matched
	// before is not written.
	gone  bool
	addrs map[netip.Addr]*addrState
	// names counts the addresses of each name.
	names map[string]int
	// bound is the last bound this selector hit, and when.
	bound   string
	boundAt time.Time
}

type addrState struct {
	expires time.Time
	name    string
}

func newAllowed() *allowed { return &allowed{matcher: fqdn.NewMatcher(nil)} }

func newSelectorState(sel fqdn.Selector) *selectorState {
	return &selectorState{sel: sel, addrs: map[netip.Addr]*addrState{}, names: map[string]int{}}
}

// setSelectors makes sels the selectors the proxy enforces, keeping what
// was allowed for those that stay and forgetting the others (their sets are
// gone with them).
func (a *allowed) setSelectors(sels []fqdn.Selector) {
	a.mu.Lock()
	defer a.mu.Unlock()
	old := map[fqdn.Selector]*selectorState{}
	for _, s := range a.sels {
		old[s.sel] = s
	}
	a.sels, a.total = make([]*selectorState, len(sels)), 0
	for i, sel := range sels {
		st := old[sel]
		if st == nil {
			st = newSelectorState(sel)
		}
		delete(old, sel)
		a.sels[i] = st
		a.total += len(st.addrs)
	}
	for _, st := range old {
		st.gone = true
	}
	a.matcher = fqdn.NewMatcher(sels)
}

// restore takes what the kernel's FQDN sets hold, after a restart: their
// selectors (from the sets' comments) become the ones enforced until the
// first apply says otherwise.
func (a *allowed) restore(sets []nftables.FQDNSetContent, now time.Time) {
	bySel := map[fqdn.Selector]*selectorState{}
	var sels []fqdn.Selector
	for _, set := range sets {
		sel, ok := fqdn.ParseKey(set.Comment)
		if !ok || set.Name != ruleset.FQDNSetName(sel, set.V6) {
			continue // not ours to interpret
		}
		st := bySel[sel]
		if st == nil {
			st = newSelectorState(sel)
			bySel[sel] = st
			sels = append(sels, sel)
		}
		for _, e := range set.Elements {
			if e.Timeout <= 0 || e.Addr.Is6() != set.V6 {
				continue
			}
			name, _ := fqdn.CanonicalName(e.Comment)
			st.put(e.Addr, name, now.Add(e.Timeout))
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, st := range a.sels {
		st.gone = true
	}
	a.sels, a.total = nil, 0
	for _, sel := range sels {
		a.sels = append(a.sels, bySel[sel])
		a.total += len(bySel[sel].addrs)
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

// expiresFor is when an address with the given TTL expires: the TTL capped
// at a day, at least the floor, plus the grace period.
func expiresFor(now time.Time, ttl, floor, grace time.Duration) time.Time {
	return now.Add(min(max(ttl, floor), maxTTL) + grace)
}

// match returns, for the names of an answer's CNAME chain in their order,
// the selectors that allow the addresses each name owns: those that match
// it or a name before it in the chain. nil when none matches.
func (a *allowed) match(chain []string) [][]*selectorState {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var (
		out  [][]*selectorState
		seen map[*selectorState]bool
		acc  []*selectorState
		idx  []int
	)
	for i, name := range chain {
		idx = a.matcher.Match(name, idx[:0])
		for _, j := range idx {
			st := a.sels[j]
			if !seen[st] {
				if seen == nil {
					seen = map[*selectorState]bool{}
				}
				seen[st] = true
				acc = append(acc, st)
			}
		}
		if len(acc) > 0 && out == nil {
			out = make([][]*selectorState, len(chain))
		}
		if out != nil {
			out[i] = slices.Clip(acc)
		}
	}
	return out
}

// fresh tells whether every address found is allowed until at least what
// its TTL asks (less refreshSlack): then the answer needs no set update.
func (a *allowed) fresh(found []found, now time.Time, floor, grace time.Duration) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	for _, f := range found {
		want := expiresFor(now, f.ttl, floor, grace).Add(-refreshSlack(grace))
		for _, sel := range f.selectors {
			st := sel.addrs[f.addr]
			if !sel.gone && (st == nil || st.expires.Before(want)) {
				return false
			}
		}
	}
	return true
}

// update allows what was found, within the bounds, through write (the
// kernel), and remembers it once the kernel took it. Writers take turns;
// the state is read for the plan and changed after the write. It returns
// the bounds hit.
func (a *allowed) update(found []found, now time.Time, floor, grace time.Duration, bounds Bounds,
	write func([]nftables.FQDNElement) error) (hit []string, err error) {
	a.write.Lock()
	defer a.write.Unlock()
	a.mu.RLock()
	type change struct {
		st      *selectorState
		addr    netip.Addr
		name    string
		expires time.Time
	}
	var (
		changes []change
		elems   []nftables.FQDNElement
	)
	// Counts as they will be after the changes planned so far.
	newNames := map[*selectorState]map[string]int{}
	added := 0
	hitOnce := map[string]bool{}
	type boundNote struct {
		st  *selectorState
		msg string
	}
	var notes []boundNote
	note := func(st *selectorState, bound, msg string) {
		notes = append(notes, boundNote{st, msg})
		if !hitOnce[bound] {
			hitOnce[bound] = true
			hit = append(hit, bound)
		}
	}
	for _, f := range found {
		expires := expiresFor(now, f.ttl, floor, grace)
		for _, st := range f.selectors {
			if st.gone {
				continue
			}
			cur := st.addrs[f.addr]
			if cur != nil && !cur.expires.Before(expires.Add(-refreshSlack(grace))) {
				continue
			}
			live := cur != nil && cur.expires.After(now)
			if !live {
				nn := newNames[st]
				if nn == nil {
					nn = map[string]int{}
					newNames[st] = nn
				}
				switch {
				case a.total+added >= bounds.Addresses:
					note(st, BoundAddresses, fmt.Sprintf("%s reached: no more addresses are allowed for any selector (%s left out)", BoundAddresses, f.name))
					continue
				case st.names[f.name]+nn[f.name] >= bounds.AddressesPerName:
					note(st, BoundAddressesPerName, fmt.Sprintf("%s reached for %s: its further addresses are left out", BoundAddressesPerName, f.name))
					continue
				case st.names[f.name]+nn[f.name] == 0 && len(st.names)+countNew(nn) >= bounds.NamesPerSelector:
					note(st, BoundNamesPerSelector, fmt.Sprintf("%s reached: %s and further names are left out", BoundNamesPerSelector, f.name))
					continue
				}
				if cur == nil {
					nn[f.name]++
					added++
				}
			}
			changes = append(changes, change{st, f.addr, f.name, expires})
			elems = append(elems, nftables.FQDNElement{
				Set: ruleset.FQDNSetName(st.sel, f.addr.Is6()), Addr: f.addr, Timeout: expires.Sub(now),
				Refresh: cur != nil && cur.expires.After(now.Add(2*time.Second)), Comment: f.name,
			})
		}
	}
	a.mu.RUnlock()
	if len(elems) > 0 {
		err = write(elems)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, n := range notes {
		n.st.bound, n.st.boundAt = n.msg, now
	}
	if err != nil {
		return hit, err
	}
	for _, c := range changes {
		// A selector dropped meanwhile took its set with it.
		if !c.st.gone && c.st.put(c.addr, c.name, c.expires) {
			a.total++
		}
	}
	return hit, nil
}

// countNew counts the names that nn adds.
func countNew(nn map[string]int) int {
	n := 0
	for _, v := range nn {
		if v > 0 {
			n++
		}
	}
	return n
}

// sweep forgets the addresses that expired (the kernel removed them).
func (a *allowed) sweep(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, st := range a.sels {
		for addr, s := range st.addrs {
			if !s.expires.After(now) {
				st.remove(addr)
				a.total--
			}
		}
	}
}

// SelectorStatus is what the proxy allows for one selector now.
type SelectorStatus struct {
	Enforced  bool
	Addresses []netip.Addr
	Count     int
	// Bound says which bound the selector hit lately, if any.
	Bound string
}

// status returns what is allowed for sel now, listing at most max addresses.
func (a *allowed) status(sel fqdn.Selector, now time.Time, limit int) SelectorStatus {
	a.mu.RLock()
	defer a.mu.RUnlock()
	for _, st := range a.sels {
		if st.sel != sel {
			continue
		}
		out := SelectorStatus{Enforced: true}
		for addr, s := range st.addrs {
			if s.expires.After(now) {
				out.Addresses = append(out.Addresses, addr)
			}
		}
		slices.SortFunc(out.Addresses, netip.Addr.Compare)
		out.Count = len(out.Addresses)
		if len(out.Addresses) > limit {
			out.Addresses = out.Addresses[:limit]
		}
		if st.bound != "" && now.Sub(st.boundAt) < boundMemory {
			out.Bound = st.bound
		}
		return out
	}
	return SelectorStatus{}
}

// counts returns the number of selectors and of allowed addresses.
func (a *allowed) counts() (selectors, addresses int) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return len(a.sels), a.total
}
