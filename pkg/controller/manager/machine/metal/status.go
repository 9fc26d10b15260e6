package metal

import (
	"fmt"
	"strings"
	"time"

	"github.com/metal-stack/metal-go/api/models"
	"k8s.io/utils/ptr"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
)

// The metal-api's words for a machine that runs its image.
const (
	// EventPhonedHome is the provisioning event of a machine that booted its image.
	EventPhonedHome = "Phoned Home"
	// LivelinessAlive is the liveliness of a machine that reports.
	LivelinessAlive = "Alive"
)

// toMachine is what the metal-api says about an allocated firewall; nil for
// a machine without allocation (free, or not a firewall any more).
func toMachine(f *models.V1FirewallResponse) *machine.Machine {
	if f == nil || f.ID == nil || f.Allocation == nil {
		return nil
	}
	a := f.Allocation
	m := &machine.Machine{
		ID:         *f.ID,
		Name:       ptr.Deref(a.Name, ""),
		Tags:       map[string]string{},
		Liveliness: ptr.Deref(f.Liveliness, ""),
	}
	for _, t := range f.Tags {
		if k, v, ok := strings.Cut(t, "="); ok {
			m.Tags[k] = v
		}
	}
	if a.Created != nil {
		m.AllocatedAt = time.Time(*a.Created).UTC().Truncate(time.Second)
	}
	if a.Image != nil && a.Image.ID != nil {
		m.ImageID = *a.Image.ID
	}
	for _, n := range a.Networks {
		if n == nil || ptr.Deref(n.Private, false) || ptr.Deref(n.Underlay, false) {
			continue
		}
		m.ExternalIPs = append(m.ExternalIPs, n.Ips...)
	}
	if e := f.Events; e != nil {
		m.CrashLoop = ptr.Deref(e.CrashLoop, false)
		// The metal-api lists the newest event first.
		if len(e.Log) > 0 && e.Log[0] != nil && e.Log[0].Event != nil {
			m.LastEvent = &machine.Event{Event: *e.Log[0].Event, Time: time.Time(e.Log[0].Time).UTC(), Message: e.Log[0].Message}
		}
	}
	m.Provisioned = !m.CrashLoop && m.Liveliness == LivelinessAlive && m.LastEvent != nil && m.LastEvent.Event == EventPhonedHome
	m.Message = message(m)
	return m
}

func message(m *machine.Machine) string {
	parts := []string{"liveliness " + orUnknown(m.Liveliness)}
	if m.LastEvent != nil {
		last := "last event " + m.LastEvent.Event
		if m.LastEvent.Message != "" {
			last += ": " + m.LastEvent.Message
		}
		parts = append(parts, last)
	} else {
		parts = append(parts, "no provisioning event yet")
	}
	if m.CrashLoop {
		parts = append(parts, "in a provisioning crash loop")
	}
	return fmt.Sprintf("machine %s: %s", m.ID, strings.Join(parts, ", "))
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
