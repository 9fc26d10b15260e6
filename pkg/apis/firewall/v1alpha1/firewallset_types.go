package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FirewallSet keeps a number of Firewalls of one template, like a ReplicaSet
// keeps Pods. A FirewallDeployment owns one set per template revision.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=fwset
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FirewallSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FirewallSetSpec   `json:"spec"`
	Status FirewallSetStatus `json:"status,omitempty"`
}

// FirewallSetSpec is the desired number of Firewalls and their template.
type FirewallSetSpec struct {
	// Replicas is the number of Firewalls the set keeps.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4
	Replicas int32 `json:"replicas"`
	// Selector matches the Firewalls the set owns, adopting orphans that match.
	Selector map[string]string `json:"selector"`
	// Template is what the set's Firewalls are created from.
	Template FirewallTemplateSpec `json:"template"`
	// Distance is the shortest distance of the set's Firewalls: its most
	// important Firewall (Ready, then the one already shortest, then the
	// oldest) gets it, the second one more, the others two more (at most
	// LongestDistance), so that one firewall attracts the traffic and the next
	// one takes over when it goes. The deployment gives a set that rolls in
	// next to an old one RollingUpdateDistance, and ShortestDistance once it is Ready.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=8
	// +optional
	Distance int32 `json:"distance,omitempty"`

	FirewallTimeouts `json:",inline"`
}

// FirewallTemplateSpec is the template of a Firewall.
type FirewallTemplateSpec struct {
	// Metadata holds the labels and annotations of created Firewalls.
	// +optional
	Metadata TemplateMetadata `json:"metadata,omitempty"`
	// Spec is the spec of created Firewalls.
	Spec FirewallSpec `json:"spec"`
}

// TemplateMetadata is the part of ObjectMeta a template may set.
type TemplateMetadata struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// FirewallSetStatus counts the set's Firewalls by health.
type FirewallSetStatus struct {
	// Replicas is the number of Firewalls the set owns.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the number of owned Firewalls that are Ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// ProgressingReplicas is the number of owned Firewalls still being created.
	// +optional
	ProgressingReplicas int32 `json:"progressingReplicas,omitempty"`
	// UnhealthyReplicas is the number of owned Firewalls past their create or
	// health timeout (or Crashing).
	// +optional
	UnhealthyReplicas int32 `json:"unhealthyReplicas,omitempty"`
	// Replacements counts the Firewalls created in place of failed ones since
	// the set was last healthy; at the manager's --max-replacements it stops.
	// +optional
	Replacements int32 `json:"replacements,omitempty"`
	// Conditions: Healthy, once a Firewall of the set failed.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the generation the manager last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// FirewallSetList is a list of FirewallSets.
//
// +kubebuilder:object:root=true
type FirewallSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FirewallSet `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &FirewallSet{}, &FirewallSetList{})
}
