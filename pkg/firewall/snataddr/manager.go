package snataddr

import (
	"errors"
	"fmt"
	"net"
	"slices"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Manager adds and removes SNAT addresses through rtnetlink.
type Manager struct {
	// NSPath is the network namespace to work in (e.g. /var/run/netns/NAME);
	// empty is the agent's own.
	NSPath string
	// RecordPath is the file that records the addresses the manager added;
	// DefaultRecordPath when empty.
	RecordPath string
}

// Check tells whether every address can be put on its interface: the
// interface exists. It changes nothing, so a refused ruleset changes nothing.
func (m *Manager) Check(want []Address) error {
	h, err := m.handle()
	if err != nil {
		return err
	}
	defer h.Close()
	var errs []error
	for _, a := range want {
		if _, err := h.LinkByName(a.Interface); err != nil {
			errs = append(errs, fmt.Errorf("SNAT address %s: interface %q: %w", a.Addr, a.Interface, err))
		}
	}
	return errors.Join(errs...)
}

// Sync puts each wanted address on its interface unless it is there, and
// removes the addresses it added earlier that are no longer wanted. An
// address that was there before the manager looked is the operator's: it is
// neither recorded nor ever removed.
func (m *Manager) Sync(want []Address) error {
	h, err := m.handle()
	if err != nil {
		return err
	}
	defer h.Close()
	rec, err := loadRecord(m.recordPath())
	if err != nil {
		return err
	}
	var errs []error
	for _, a := range want {
		if err := m.ensure(h, rec, a); err != nil {
			errs = append(errs, err)
		}
	}
	for _, a := range append([]Address(nil), rec.addrs...) {
		if slices.Contains(want, a) {
			continue
		}
		if err := m.release(h, rec, a); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Added returns the addresses the manager added and has not removed.
func (m *Manager) Added() ([]Address, error) {
	rec, err := loadRecord(m.recordPath())
	if err != nil {
		return nil, err
	}
	return rec.addrs, nil
}

func (m *Manager) ensure(h *netlink.Handle, rec *record, a Address) error {
	link, err := h.LinkByName(a.Interface)
	if err != nil {
		return fmt.Errorf("SNAT address %s: interface %q: %w", a.Addr, a.Interface, err)
	}
	present, err := hasAddress(h, link, a)
	if err != nil {
		return err
	}
	if present {
		return nil
	}
	if err := rec.add(a); err != nil {
		return err
	}
	if err := h.AddrAdd(link, netlinkAddr(a)); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("adding SNAT address %s: %w", a, err)
	}
	return nil
}

// release removes an address the manager added. One that is gone already,
// or whose interface is, is only forgotten.
func (m *Manager) release(h *netlink.Handle, rec *record, a Address) error {
	link, err := h.LinkByName(a.Interface)
	if err == nil {
		err = h.AddrDel(link, netlinkAddr(a))
	}
	var notFound netlink.LinkNotFoundError
	if err != nil && !errors.As(err, &notFound) && !errors.Is(err, unix.EADDRNOTAVAIL) && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("removing SNAT address %s: %w", a, err)
	}
	return rec.remove(a)
}

func (m *Manager) handle() (*netlink.Handle, error) {
	if m.NSPath == "" {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return nil, fmt.Errorf("opening rtnetlink: %w", err)
		}
		return h, nil
	}
	ns, err := netns.GetFromPath(m.NSPath)
	if err != nil {
		return nil, fmt.Errorf("opening network namespace %s: %w", m.NSPath, err)
	}
	defer func() { _ = ns.Close() }()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("opening rtnetlink in %s: %w", m.NSPath, err)
	}
	return h, nil
}

func (m *Manager) recordPath() string {
	if m.RecordPath == "" {
		return DefaultRecordPath
	}
	return m.RecordPath
}

func hasAddress(h *netlink.Handle, link netlink.Link, a Address) (bool, error) {
	family := netlink.FAMILY_V4
	if a.Addr.Is6() {
		family = netlink.FAMILY_V6
	}
	addrs, err := h.AddrList(link, family)
	if err != nil {
		return false, fmt.Errorf("listing the addresses of %q: %w", a.Interface, err)
	}
	for _, x := range addrs {
		if x.IP.Equal(net.IP(a.Addr.AsSlice())) {
			return true, nil
		}
	}
	return false, nil
}

// netlinkAddr is a host address (/32, /128) without a prefix route, usable
// at once (no duplicate address detection for IPv6).
func netlinkAddr(a Address) *netlink.Addr {
	bits := a.Addr.BitLen()
	out := &netlink.Addr{IPNet: &net.IPNet{IP: net.IP(a.Addr.AsSlice()), Mask: net.CIDRMask(bits, bits)}}
	if a.Addr.Is6() {
		out.Flags = unix.IFA_F_NODAD | unix.IFA_F_NOPREFIXROUTE
	}
	return out
}
