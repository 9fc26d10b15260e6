package fqdn

import (
	"slices"
	"strings"
)

// Matcher finds the selectors that match a name among many: exact names by
// one map lookup, patterns by the literal text after their last * (the
// name must end with it), so a name is compared with the few patterns that
// can match it, not with all. A Matcher is immutable and safe for
// concurrent use. Selectors given twice are reported twice.
type Matcher struct {
	selectors []Selector
	exact     map[string][]int
	// byTail holds the patterns by the text after their last *; tailLens
	// are the lengths of those texts, longest first.
	byTail   map[string][]int
	tailLens []int
}

// NewMatcher indexes selectors; Match reports them by their index here.
func NewMatcher(selectors []Selector) *Matcher {
	m := &Matcher{selectors: slices.Clone(selectors), exact: map[string][]int{}, byTail: map[string][]int{}}
	for i, s := range selectors {
		if !s.Pattern {
			m.exact[s.Name] = append(m.exact[s.Name], i)
			continue
		}
		tail := s.Name[strings.LastIndexByte(s.Name, '*')+1:]
		if _, ok := m.byTail[tail]; !ok {
			m.tailLens = append(m.tailLens, len(tail))
		}
		m.byTail[tail] = append(m.byTail[tail], i)
	}
	slices.Sort(m.tailLens)
	m.tailLens = slices.Compact(m.tailLens)
	return m
}

// Selectors returns the selectors in the order NewMatcher got them.
func (m *Matcher) Selectors() []Selector { return m.selectors }

// Len is the number of selectors.
func (m *Matcher) Len() int { return len(m.selectors) }

// Match appends to dst the indexes of the selectors that match the name in
// canonical form (see CanonicalName) and returns dst.
func (m *Matcher) Match(name string, dst []int) []int {
	dst = append(dst, m.exact[name]...)
	for _, l := range m.tailLens {
		if l > len(name) {
			break
		}
		for _, i := range m.byTail[name[len(name)-l:]] {
			if glob(m.selectors[i].Name, name) {
				dst = append(dst, i)
			}
		}
	}
	return dst
}
