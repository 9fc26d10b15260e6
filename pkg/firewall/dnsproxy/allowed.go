package dnsproxy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
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

// found is an address in an answer: name owns it, selectors allow it, as
// they match one of names (the chain from the asked name to name).
type found struct {
	name      string
	names     []string
	addr      netip.Addr
	ttl       time.Duration
	selectors []*selectorState
}

// allowed is what the proxy has allowed, per selector: the addresses with
// the time they expire, and by which name; and per FQDN set (shared by the
// selectors of one port list) the addresses the kernel holds, with their
// expiry there and the names their comment carries. An address stays in a
// set while some selector bound to the set allows it. Readers ask whether
// an answer needs a set update. State changes only once the kernel has the
// update, so nobody releases an answer for an address whose update is still
// in flight: a reader that does not find it fresh becomes a writer and
// waits for the write in flight. Writers take turns (write); mu is held for
// reading and changing the state only, never across the kernel's update, so
// answers that need none are not held up by one that does.
type allowed struct {
	write   sync.Mutex
	mu      sync.RWMutex
	matcher *fqdn.Matcher
	sels    []*selectorState
	sets    map[string]*setState
	total   int
}

type selectorState struct {
	sel fqdn.Selector
	// gone tells that the selector is no longer enforced: what was matched
	// before is not written.
	gone bool
	// sets are the FQDN sets its addresses go to.
	sets  []*setState
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

// setState is an FQDN set (both families) as the kernel holds it.
type setState struct {
	base  string
	elems map[netip.Addr]*elemState
}

// elemState is an element of an FQDN set: when the kernel drops it, and
// the names its comment carries (which selectors allowed it, for a
// restarted agent).
type elemState struct {
	expires time.Time
	names   []string
}

func newAllowed() *allowed {
	return &allowed{matcher: fqdn.NewMatcher(nil), sets: map[string]*setState{}}
}

func newSelectorState(sel fqdn.Selector) *selectorState {
	return &selectorState{sel: sel, addrs: map[netip.Addr]*addrState{}, names: map[string]int{}}
}

func newSetState(base string) *setState {
	return &setState{base: base, elems: map[netip.Addr]*elemState{}}
}

func (s *selectorState) boundTo(set *setState) bool { return slices.Contains(s.sets, set) }

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
			if sel.gone {
				continue
			}
			if st := sel.addrs[f.addr]; st == nil || st.expires.Before(want) {
				return false
			}
			for _, set := range sel.sets {
				if el := set.elems[f.addr]; el == nil || el.expires.Before(want) || namesMissing(el.names, f.names) {
					return false
				}
			}
		}
	}
	return true
}

// live tells whether every address found is in every set it belongs in,
// for its selectors, for at least margin from now.
func (a *allowed) live(found []found, now time.Time, margin time.Duration) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	until := now.Add(margin)
	for _, f := range found {
		for _, sel := range f.selectors {
			if sel.gone {
				continue
			}
			if st := sel.addrs[f.addr]; st == nil || !st.expires.After(until) {
				return false
			}
			for _, set := range sel.sets {
				if el := set.elems[f.addr]; el == nil || !el.expires.After(until) {
					return false
				}
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
	type elemKey struct {
		set  *setState
		addr netip.Addr
	}
	var (
		changes []change
		elems   []nftables.FQDNElement
		planned = map[elemKey]int{} // index in elems and setChanges
		// setChanges are the elements as the kernel will hold them.
		setChanges []elemKey
		setStates  []elemState
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
		stale := expires.Add(-refreshSlack(grace))
		for _, st := range f.selectors {
			if st.gone {
				continue
			}
			cur := st.addrs[f.addr]
			needs := cur == nil || cur.expires.Before(stale)
			for _, set := range st.sets {
				el := set.elems[f.addr]
				needs = needs || el == nil || el.expires.Before(stale) || namesMissing(el.names, f.names)
			}
			if !needs {
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
			// One element per set, whichever of its selectors asks.
			for _, set := range st.sets {
				key := elemKey{set, f.addr}
				el := set.elems[f.addr]
				if i, ok := planned[key]; ok {
					setStates[i].names = mergeNames(f.names, setStates[i].names)
					elems[i].Comment = commentOf(setStates[i].names)
					continue
				}
				// An element another selector's name added is written again
				// with this one's names too: a restarted agent learns from
				// the comment which selectors allow it.
				if el != nil && !el.expires.Before(stale) && !namesMissing(el.names, f.names) {
					continue
				}
				next := elemState{expires: expires, names: f.names}
				if el != nil {
					next.names = mergeNames(f.names, el.names)
					if el.expires.After(expires) {
						next.expires = el.expires
					}
				}
				planned[key] = len(elems)
				setChanges = append(setChanges, key)
				setStates = append(setStates, next)
				elems = append(elems, nftables.FQDNElement{
					Set: ruleset.FQDNSetName(set.base, f.addr.Is6()), Addr: f.addr, Timeout: next.expires.Sub(now),
					Refresh: el != nil && el.expires.After(now.Add(2*time.Second)), Comment: commentOf(next.names),
				})
			}
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
	for i, key := range setChanges {
		el := setStates[i]
		key.set.elems[key.addr] = &el
	}
	for _, c := range changes {
		if c.st.gone {
			continue
		}
		if cur := c.st.addrs[c.addr]; cur != nil && cur.expires.After(c.expires) {
			c.expires = cur.expires
		}
		if c.st.put(c.addr, c.name, c.expires) {
			a.total++
		}
	}
	return hit, nil
}

// maxComment is the longest element comment written: the kernel keeps 256
// bytes of user data, with a type and a length byte.
const maxComment = 250

// mergeNames returns the names of first and then those of second that are
// not among them, as many as fit a comment.
func mergeNames(first, second []string) []string {
	out := make([]string, 0, len(first)+len(second))
	size := -1
	for _, n := range slices.Concat(first, second) {
		if slices.Contains(out, n) || size+1+len(n) > maxComment {
			continue
		}
		out = append(out, n)
		size += 1 + len(n)
	}
	return out
}

// namesMissing tells whether names has one that have lacks and a comment
// with have would still take.
func namesMissing(have, names []string) bool {
	size := -1
	for _, n := range have {
		size += 1 + len(n)
	}
	for _, n := range names {
		if !slices.Contains(have, n) && size+1+len(n) <= maxComment {
			return true
		}
	}
	return false
}

// commentOf is the comment of an element: its names, separated by blanks.
func commentOf(names []string) string { return strings.Join(names, " ") }

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
	for _, set := range a.sets {
		for addr, el := range set.elems {
			if !el.expires.After(now) {
				delete(set.elems, addr)
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
