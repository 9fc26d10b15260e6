package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/fielderrors"
)

// validateMetrics checks the metrics section: a network ID, and a port that
// is not the DNS proxy's. The network need not be in networks: the metal
// source brings its own.
func validateMetrics(cfg *agentconfigv1alpha1.Config) field.ErrorList {
	m := cfg.Metrics
	if m == nil {
		return nil
	}
	p := field.NewPath("metrics")
	allErrs := validation.ValidateMetalID(m.InternalNetwork, p.Child("internalNetwork"))
	if cfg.DNS != nil && m.ListenPort() == cfg.DNS.ListenPort() {
		allErrs = append(allErrs, fielderrors.Invalid(p.Child("port"), fmt.Sprint(m.ListenPort()), fmt.Sprintf("the DNS proxy listens on port %d", cfg.DNS.ListenPort())))
	}
	return allErrs
}
