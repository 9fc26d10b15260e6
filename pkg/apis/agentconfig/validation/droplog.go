package validation

import (
	"net/url"

	"k8s.io/apimachinery/pkg/util/validation/field"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
)

// validateDropLog checks the dropLog section: bounded numbers, an https
// receiver, and a shoot source, whose credential the agent sends with every
// batch.
func validateDropLog(cfg *agentconfigv1alpha1.Config) field.ErrorList {
	d := cfg.DropLog
	if d == nil {
		return nil
	}
	var allErrs field.ErrorList
	p := field.NewPath("dropLog")
	if d.RatePerSecond > agentconfigv1alpha1.MaxDropLogRate {
		allErrs = append(allErrs, field.Invalid(p.Child("ratePerSecond"), d.RatePerSecond, "must be at most 100000"))
	}
	if d.QueueSize < 0 || d.QueueSize > agentconfigv1alpha1.MaxDropLogQueueSize {
		allErrs = append(allErrs, field.Invalid(p.Child("queueSize"), d.QueueSize, "must be between 1 and 1000000"))
	}
	if d.ReceiverURL != "" {
		u, err := url.Parse(d.ReceiverURL)
		switch {
		case len(d.ReceiverURL) > 2048:
			allErrs = append(allErrs, field.TooLong(p.Child("receiverURL"), "", 2048))
		case err != nil || u.Scheme != "https" || u.Host == "":
			allErrs = append(allErrs, field.Invalid(p.Child("receiverURL"), d.ReceiverURL, "must be an https URL with a host"))
		}
	}
	if cfg.Sources.Shoot == nil {
		allErrs = append(allErrs, field.Required(field.NewPath("sources", "shoot"), "dropLog sends the events with the agent's shoot credential"))
	}
	return allErrs
}
