package firewallset

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// Reasons of a failed Firewall, also those of the events about it.
const (
	ReasonCreateTimeout = "CreateTimeout"
	ReasonHealthTimeout = "HealthTimeout"
)

// verdict is what the set makes of one of its Firewalls.
type verdict struct {
	fw    *firewallv1alpha1.Firewall
	ready bool
	// reported tells whether the agent ever reported into this seed.
	reported bool
	// deadline is when a Firewall that is not Ready fails.
	deadline time.Time
	// failed: not Ready past its deadline; reason and message say which timeout.
	failed          bool
	reason, message string
}

// judge measures a Firewall that is not Ready against its timeouts. One
// that has never been Ready (its agent never reported, or the Ready
// condition still says Booting) has createTimeout from its creation; one
// that was Ready has healthTimeout from when it stopped being Ready. A
// report alone does not mean it was Ready: the set may see the first
// heartbeat before the Ready condition it leads to, and a health timeout
// shorter than the boot failed the firewall as it came up.
func judge(fw *firewallv1alpha1.Firewall, createTimeout, healthTimeout time.Duration, now time.Time) verdict {
	v := verdict{fw: fw, ready: isReady(fw)}
	if v.ready {
		return v
	}
	ready := meta.FindStatusCondition(fw.Status.Conditions, firewallv1alpha1.ConditionReady)
	why := "no Ready condition yet"
	if ready != nil {
		why = ready.Message
	}
	v.reported = fw.Status.AgentStatus != nil && fw.Status.AgentStatus.LastRunAgainstSeed != nil
	switch {
	case !v.reported:
		v.deadline = fw.CreationTimestamp.Add(createTimeout)
		v.reason = ReasonCreateTimeout
		v.message = fmt.Sprintf("Firewall %s not Ready %s after its creation (create timeout), its agent never reported: %s", fw.Name, createTimeout, why)
	case ready == nil || ready.Reason == firewallv1alpha1.ReasonBooting:
		v.deadline = fw.CreationTimestamp.Add(createTimeout)
		v.reason = ReasonCreateTimeout
		v.message = fmt.Sprintf("Firewall %s not Ready %s after its creation (create timeout), never Ready: %s", fw.Name, createTimeout, why)
	default:
		since := fw.CreationTimestamp.Time
		if ready != nil && ready.Status != metav1.ConditionTrue && ready.LastTransitionTime.After(since) {
			since = ready.LastTransitionTime.Time
		}
		v.deadline = since.Add(healthTimeout)
		v.reason = ReasonHealthTimeout
		v.message = fmt.Sprintf("Firewall %s not Ready for %s (health timeout): %s", fw.Name, healthTimeout, why)
	}
	v.failed = !now.Before(v.deadline)
	return v
}

// keepFirst orders failed Firewalls by what they are worth as a fallback
// until a replacement is Ready: one whose agent reported has forwarded with
// rules and likely still does; among equals the older, the original.
func keepFirst(a, b verdict) bool {
	if a.reported != b.reported {
		return a.reported
	}
	return a.fw.CreationTimestamp.Before(&b.fw.CreationTimestamp)
}

// backoff is the pause before the n-th replacement (n from 1) after the last
// failure: none for the first, then base, 2*base, 4*base, ...
func backoff(base time.Duration, n int32) time.Duration {
	if n <= 1 {
		return 0
	}
	d := base
	for i := int32(2); i < n && d < time.Hour; i++ {
		d *= 2
	}
	return d
}

func isReady(fw *firewallv1alpha1.Firewall) bool {
	return meta.IsStatusConditionTrue(fw.Status.Conditions, firewallv1alpha1.ConditionReady)
}
