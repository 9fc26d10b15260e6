package firewall

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// maxReasons bounds what a "not forwarding" message lists: it ends up in the
// Extension's lastError and the shoot's status.
const maxReasons = 5

// forwarding tells whether the deployment's newest set has as many firewalls
// as wanted that forward with their current rules: Ready, their agent
// reporting into the seed (SeedConnected) and the shoot (Connected), and the
// Firewall's spec in force (agentStatus.appliedGeneration). When not, it says
// what is missing, naming each firewall and condition. sets and firewalls are
// those of the deployment's namespace.
func forwarding(d *firewallv1alpha1.FirewallDeployment, sets []firewallv1alpha1.FirewallSet, firewalls []firewallv1alpha1.Firewall) (bool, string) {
	if d.Status.ObservedGeneration != d.Generation {
		return false, fmt.Sprintf("FirewallDeployment %s/%s: generation %d not yet observed by the firewall manager (it acted on %d)",
			d.Namespace, d.Name, d.Generation, d.Status.ObservedGeneration)
	}
	set := newestSet(d, sets)
	if set == nil {
		return false, fmt.Sprintf("FirewallDeployment %s/%s: no FirewallSet of revision %d yet", d.Namespace, d.Name, d.Status.ObservedRevision)
	}
	if set.Status.ObservedGeneration != set.Generation {
		return false, fmt.Sprintf("FirewallSet %s: generation %d not yet observed by the firewall manager", set.Name, set.Generation)
	}
	// The set is read from another cache than the deployment: it may not carry the
	// deployment's rules yet, and its firewalls then match its old ones.
	if !equality.Semantic.DeepEqual(set.Spec.Template.Spec.FirewallTrafficSpec, d.Spec.Template.Spec.FirewallTrafficSpec) {
		return false, fmt.Sprintf("FirewallSet %s: the deployment's current rules not yet passed to it", set.Name)
	}
	want := int(d.Spec.Replicas)
	var ok int
	var reasons []string
	selector := labels.SelectorFromSet(set.Spec.Selector)
	for i := range firewalls {
		fw := &firewalls[i]
		if fw.DeletionTimestamp != nil || !selector.Matches(labels.Set(fw.Labels)) {
			continue
		}
		if why := notForwarding(fw, set); why != "" {
			reasons = append(reasons, fmt.Sprintf("firewall %s/%s: %s", fw.Namespace, fw.Name, why))
			continue
		}
		ok++
	}
	if ok >= want {
		return true, ""
	}
	sort.Strings(reasons)
	if len(reasons) > maxReasons {
		reasons = append(reasons[:maxReasons], fmt.Sprintf("and %d more", len(reasons)-maxReasons))
	}
	msg := fmt.Sprintf("%d of %d firewalls of FirewallSet %s forward with their rules", ok, want, set.Name)
	if len(reasons) > 0 {
		msg += ": " + strings.Join(reasons, "; ")
	}
	if c := meta.FindStatusCondition(set.Status.Conditions, firewallv1alpha1.ConditionHealthy); c != nil && c.Status != metav1.ConditionTrue {
		msg += fmt.Sprintf(" (%s: %s)", c.Reason, c.Message)
	}
	return false, msg
}

// newestSet is the deployment's set of its observed revision, not being deleted.
func newestSet(d *firewallv1alpha1.FirewallDeployment, sets []firewallv1alpha1.FirewallSet) *firewallv1alpha1.FirewallSet {
	selector := labels.SelectorFromSet(d.Spec.Selector)
	want := strconv.FormatInt(d.Status.ObservedRevision, 10)
	for i := range sets {
		s := &sets[i]
		if s.DeletionTimestamp == nil && s.Annotations[firewallv1alpha1.AnnotationRevision] == want && selector.Matches(labels.Set(s.Labels)) {
			return s
		}
	}
	return nil
}

// notForwarding says why a firewall does not forward with its set's rules,
// "" when it does. A Firewall whose agent cannot reach the seed (annotated
// no-controller-connection) only needs to be Ready: nothing can tell more.
func notForwarding(fw *firewallv1alpha1.Firewall, set *firewallv1alpha1.FirewallSet) string {
	var why []string
	for _, t := range []string{firewallv1alpha1.ConditionReady, firewallv1alpha1.ConditionSeedConnected, firewallv1alpha1.ConditionConnected} {
		if t != firewallv1alpha1.ConditionReady && fw.Annotations[firewallv1alpha1.AnnotationNoControllerConnection] != "" {
			continue
		}
		if c := meta.FindStatusCondition(fw.Status.Conditions, t); c == nil {
			why = append(why, t+" not reported yet")
		} else if c.Status != metav1.ConditionTrue {
			why = append(why, fmt.Sprintf("%s=%s (%s)", t, c.Status, c.Message))
		}
	}
	if _, skip := fw.Annotations[firewallv1alpha1.AnnotationNoControllerConnection]; skip {
		return strings.Join(why, ", ")
	}
	if !equality.Semantic.DeepEqual(fw.Spec.FirewallTrafficSpec, set.Spec.Template.Spec.FirewallTrafficSpec) {
		why = append(why, "the set's current rules not yet passed to the Firewall")
	}
	switch a := fw.Status.AgentStatus; {
	case a == nil:
		why = append(why, "no agent status")
	case a.AppliedGeneration != fw.Generation:
		applied := fmt.Sprintf("rules of generation %d not applied (agent has %d in force)", fw.Generation, a.AppliedGeneration)
		if a.Message != "" {
			applied += ": " + a.Message
		}
		why = append(why, applied)
	}
	return strings.Join(why, ", ")
}
