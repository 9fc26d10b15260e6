package lab_test

import (
	"fmt"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/test/lab"
)

// timeline records when each firewall's state changed, counted from the
// streams' start, with the stream sequence number sent at that moment: a
// loss in the streams' LostRanges is set beside the step that caused it.
type timeline struct {
	start  time.Time
	mu     sync.Mutex
	last   map[string]string
	events []string
}

func newTimeline(start time.Time) *timeline {
	return &timeline{start: start, last: map[string]string{}}
}

// observe records the firewalls' states; a firewall seen before and now
// missing is recorded as deleted.
func (t *timeline) observe(fws []firewallv1alpha1.Firewall) {
	t.mu.Lock()
	defer t.mu.Unlock()
	seen := map[string]bool{}
	for _, fw := range fws {
		seen[fw.Name] = true
		t.recordLocked(fw.Name, firewallState(fw))
	}
	for name := range t.last {
		if !seen[name] && t.last[name] != "machine halted" {
			t.recordLocked(name, "deleted")
		}
	}
}

// record records a firewall's state.
func (t *timeline) record(name, state string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.recordLocked(name, state)
}

func (t *timeline) recordLocked(name, state string) {
	if t.last[name] == state {
		return
	}
	t.last[name] = state
	s := time.Since(t.start).Seconds()
	t.events = append(t.events, fmt.Sprintf("%6.1f s (seq %6d): %s %s", s, int(s*lab.StreamRate), name, state))
}

// firewallState is what the roll's order depends on: the distance given,
// the one in force, and the phase.
func firewallState(fw firewallv1alpha1.Firewall) string {
	announced := "-"
	if a := fw.Status.AgentStatus; a != nil && a.Distance != nil {
		announced = fmt.Sprint(*a.Distance)
	}
	return fmt.Sprintf("distance %d, announces %s, %s", fw.Spec.Distance, announced, fw.Status.Phase)
}

func (t *timeline) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return fmt.Sprintf("  timeline (from the streams' start at %s UTC):\n    ", t.start.UTC().Format("15:04:05.000")) + strings.Join(t.events, "\n    ")
}

// describeFirewalls says, short, what keeps each firewall from Ready: its
// state and its conditions that are not True, with their messages.
func describeFirewalls(fws []firewallv1alpha1.Firewall) string {
	if len(fws) == 0 {
		return "no Firewall"
	}
	var b strings.Builder
	for _, fw := range fws {
		fmt.Fprintf(&b, "%s: %s", fw.Name, firewallState(fw))
		if m := fw.Status.MachineStatus; m != nil && m.LastEvent != nil {
			fmt.Fprintf(&b, ", machine %s", m.LastEvent.Event)
		}
		for _, c := range fw.Status.Conditions {
			if c.Status != metav1.ConditionTrue {
				fmt.Fprintf(&b, "; %s=%s %s: %.200s", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
