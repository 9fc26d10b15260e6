package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
)

// validateMetrics checks the metrics section. The network need not be in
// networks: the metal source brings its own, and an unmapped network only
// leaves the metrics unserved.
func validateMetrics(cfg *agentconfigv1alpha1.Config) field.ErrorList {
	return validation.ValidateAgentMetrics(cfg.Metrics, cfg.DNS, field.NewPath("metrics"))
}
