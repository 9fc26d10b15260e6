package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// GroupName is the API group of the firewall kinds.
const GroupName = "firewall.metal-firewall.io"

var (
	// SchemeGroupVersion is the group version of the firewall kinds.
	SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}
	// SchemeBuilder collects the kinds; each kind registers itself in its own file.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}
	// AddToScheme adds the firewall kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
