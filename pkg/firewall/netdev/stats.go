package netdev

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
)

// MaxDevices bounds the devices read when no names are given, so that a
// machine with many interfaces cannot make the metrics or the monitor grow.
const MaxDevices = 32

// Stats are one interface's counters since it came up.
type Stats struct {
	Name                 string
	RxBytes, TxBytes     uint64
	RxPackets, TxPackets uint64
	RxErrors, TxErrors   uint64
	RxDropped, TxDropped uint64
}

// Read returns the statistics of the named interfaces, sorted by name; an
// interface that does not exist is left out. Without names, those of every
// interface but the loopback, at most MaxDevices.
func Read(names []string) ([]Stats, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("listing interfaces: %w", err)
	}
	var out []Stats
	for _, l := range links {
		attrs := l.Attrs()
		if attrs == nil || attrs.Statistics == nil {
			continue
		}
		if len(names) == 0 && attrs.Flags&net.FlagLoopback != 0 || len(names) > 0 && !slices.Contains(names, attrs.Name) {
			continue
		}
		st := attrs.Statistics
		out = append(out, Stats{Name: attrs.Name,
			RxBytes: st.RxBytes, TxBytes: st.TxBytes, RxPackets: st.RxPackets, TxPackets: st.TxPackets,
			RxErrors: st.RxErrors, TxErrors: st.TxErrors, RxDropped: st.RxDropped, TxDropped: st.TxDropped})
	}
	slices.SortFunc(out, func(x, y Stats) int { return strings.Compare(x.Name, y.Name) })
	if len(out) > MaxDevices {
		out = out[:MaxDevices]
	}
	return out, nil
}
