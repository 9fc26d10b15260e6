package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FirewallDeployment rolls out a shoot's firewalls: it owns one FirewallSet
// per revision of the immutable part of its template.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=fwdeploy
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.spec.strategy`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.observedRevision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FirewallDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FirewallDeploymentSpec   `json:"spec"`
	Status FirewallDeploymentStatus `json:"status,omitempty"`
}

// UpdateStrategy says how a new revision replaces the old one.
// +kubebuilder:validation:Enum=RollingUpdate;Recreate
type UpdateStrategy string

const (
	// StrategyRollingUpdate creates the new set first and removes the old one
	// only when the new one is Ready: no moment without a firewall.
	StrategyRollingUpdate UpdateStrategy = "RollingUpdate"
	// StrategyRecreate removes the old set first, for partitions without spare
	// machines or networks that allow only one firewall.
	StrategyRecreate UpdateStrategy = "Recreate"
)

// FirewallDeploymentSpec is the desired firewall rollout.
type FirewallDeploymentSpec struct {
	// Strategy is RollingUpdate (default) or Recreate.
	// +optional
	Strategy UpdateStrategy `json:"strategy,omitempty"`
	// Replicas is the number of firewalls, 0 to MaxReplicas (4), normally 1.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4
	Replicas int32 `json:"replicas"`
	// Selector matches the FirewallSets and Firewalls the deployment owns.
	Selector map[string]string `json:"selector"`
	// Template is what the firewalls are created from.
	Template FirewallTemplateSpec `json:"template"`

	FirewallTimeouts `json:",inline"`
}

// FirewallTimeouts say when a Firewall that is not Ready is replaced; the
// manager's defaults (--create-timeout, --health-timeout, --distance-timeout)
// apply when unset.
// Changing them rolls no firewall.
type FirewallTimeouts struct {
	// CreateTimeout is how long a Firewall whose agent never reported may
	// take to become Ready before it is replaced.
	// +optional
	CreateTimeout *metav1.Duration `json:"createTimeout,omitempty"`
	// HealthTimeout is how long a Firewall whose agent has reported may stay
	// not Ready before it is replaced.
	// +optional
	HealthTimeout *metav1.Duration `json:"healthTimeout,omitempty"`
	// DistanceTimeout is how long a rolling update waits, at each of its
	// steps, for the firewalls to announce the distance it set (their agents
	// report it) before it goes on without them.
	// +optional
	DistanceTimeout *metav1.Duration `json:"distanceTimeout,omitempty"`
}

// FirewallDeploymentStatus reports the rollout.
type FirewallDeploymentStatus struct {
	// ObservedRevision is the revision of the newest set.
	// +optional
	ObservedRevision int64 `json:"observedRevision,omitempty"`
	// Replicas counts the Firewalls of all owned sets.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas counts the Ready Firewalls of the newest set.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// ProgressingReplicas counts the Firewalls of the newest set still being created.
	// +optional
	ProgressingReplicas int32 `json:"progressingReplicas,omitempty"`
	// UnhealthyReplicas counts the Firewalls of the newest set past the health timeout.
	// +optional
	UnhealthyReplicas int32 `json:"unhealthyReplicas,omitempty"`
	// Conditions are Available and Progressing.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the generation the manager last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// FirewallDeploymentList is a list of FirewallDeployments.
//
// +kubebuilder:object:root=true
type FirewallDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FirewallDeployment `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &FirewallDeployment{}, &FirewallDeploymentList{})
}
