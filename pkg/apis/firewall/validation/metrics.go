package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/fielderrors"
)

// ValidateAgentMetrics checks the metrics settings at fldPath: a network ID,
// and a port that is not the DNS proxy's (dns may be nil).
func ValidateAgentMetrics(m *fwv1alpha1.AgentMetrics, dns *fwv1alpha1.DNSProxy, fldPath *field.Path) field.ErrorList {
	return validateAgentMetrics(m, dns, fldPath, true)
}

// validateAgentMetrics is ValidateAgentMetrics; without networkRequired, an
// empty internal network is allowed (a providerConfig's, which the node
// network fills in).
func validateAgentMetrics(m *fwv1alpha1.AgentMetrics, dns *fwv1alpha1.DNSProxy, fldPath *field.Path, networkRequired bool) field.ErrorList {
	if m == nil {
		return nil
	}
	var allErrs field.ErrorList
	if networkRequired || m.InternalNetwork != "" {
		allErrs = ValidateMetalID(m.InternalNetwork, fldPath.Child("internalNetwork"))
	}
	if dns != nil && m.ListenPort() == dns.ListenPort() {
		allErrs = append(allErrs, fielderrors.Invalid(fldPath.Child("port"), fmt.Sprint(m.ListenPort()),
			fmt.Sprintf("the DNS proxy listens on port %d", dns.ListenPort())))
	}
	return allErrs
}
