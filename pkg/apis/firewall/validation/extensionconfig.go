package validation

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/fielderrors"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/strict"
)

// MaxProviderConfigBytes bounds a `firewall` providerConfig.
const MaxProviderConfigBytes = 256 << 10

// DecodeFirewallExtensionConfig decodes a `firewall` extension's
// providerConfig strictly (see pkg/utils/strict) and validates it; errors are under `providerConfig`.
func DecodeFirewallExtensionConfig(raw []byte) (*firewallv1alpha1.FirewallExtensionConfig, error) {
	cfg, errs := DecodeFirewallExtensionConfigAt(raw, field.NewPath("providerConfig"))
	return cfg, errs.ToAggregate()
}

// DecodeFirewallExtensionConfigAt is DecodeFirewallExtensionConfig with the
// errors under fldPath, e.g. spec.extensions[2].providerConfig of a Shoot.
// At most strict.MaxErrors errors are returned, and a count of the rest.
func DecodeFirewallExtensionConfigAt(raw []byte, fldPath *field.Path) (*firewallv1alpha1.FirewallExtensionConfig, field.ErrorList) {
	cfg := &firewallv1alpha1.FirewallExtensionConfig{}
	if errs := strict.Decode(raw, cfg, fldPath, strict.Options{
		MaxBytes: MaxProviderConfigBytes,
		Required: "size, image, partition and project are required",
	}); len(errs) > 0 {
		if timeoutErrs := malformedTimeouts(raw, fldPath); len(timeoutErrs) > 0 {
			return nil, timeoutErrs
		}
		return nil, errs
	}
	if errs := ValidateFirewallExtensionConfig(cfg, fldPath); len(errs) > 0 {
		return nil, fielderrors.Bound(errs, fldPath)
	}
	return cfg, nil
}

// ValidateFirewallExtensionConfig checks the config as the Firewall spec it
// becomes. Until the node network is known (nodeNetwork set, or found by the
// extension), networks may be empty and the
// networks a SNAT rule, a rate limit or the metrics name are not checked
// against them.
func ValidateFirewallExtensionConfig(cfg *firewallv1alpha1.FirewallExtensionConfig, fldPath *field.Path) field.ErrorList {
	return validateFirewallExtensionConfig(cfg, fldPath, cfg.NodeNetwork != "")
}

// ValidateResolvedFirewallExtensionConfig checks the config as the Firewall
// spec it becomes once the extension added what it found:
// its networks are all there are.
func ValidateResolvedFirewallExtensionConfig(cfg *firewallv1alpha1.FirewallExtensionConfig, fldPath *field.Path) field.ErrorList {
	return validateFirewallExtensionConfig(cfg, fldPath, true)
}

func validateFirewallExtensionConfig(cfg *firewallv1alpha1.FirewallExtensionConfig, fldPath *field.Path, known bool) field.ErrorList {
	networks := cfg.Networks
	var allErrs field.ErrorList
	if cfg.NodeNetwork != "" {
		allErrs = append(allErrs, ValidateMetalID(cfg.NodeNetwork, fldPath.Child("nodeNetwork"))...)
		if !slices.Contains(networks, cfg.NodeNetwork) {
			networks = append(slices.Clone(networks), cfg.NodeNetwork)
		}
	}
	spec := firewallv1alpha1.FirewallSpec{
		Size: cfg.Size, Image: cfg.Image, Partition: cfg.Partition, Project: cfg.Project, Networks: networks,
		FirewallTrafficSpec: cfg.FirewallTrafficSpec, AgentVersion: cfg.AgentVersion, AgentURL: cfg.AgentURL,
		AgentSHA256: cfg.AgentSHA256, AgentSHA512: cfg.AgentSHA512,
	}
	allErrs = append(allErrs, validateFirewallSpec(spec, fldPath, known)...)
	if r := cfg.Replicas; r != nil && (*r < 1 || *r > firewallv1alpha1.MaxReplicas) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("replicas"), *r, fmt.Sprintf("must be within [1, %d]", firewallv1alpha1.MaxReplicas)))
	}
	switch cfg.Strategy {
	case "", firewallv1alpha1.StrategyRollingUpdate, firewallv1alpha1.StrategyRecreate:
	default:
		allErrs = append(allErrs, fielderrors.NotSupported(fldPath.Child("strategy"), cfg.Strategy,
			[]firewallv1alpha1.UpdateStrategy{firewallv1alpha1.StrategyRollingUpdate, firewallv1alpha1.StrategyRecreate}))
	}
	// A shoot owner's timeout below a minute would replace firewalls that are still booting.
	allErrs = append(allErrs, validateTimeouts(firewallv1alpha1.FirewallTimeouts{CreateTimeout: cfg.CreateTimeout, HealthTimeout: cfg.HealthTimeout, DistanceTimeout: cfg.DistanceTimeout},
		MinShootTimeout, fldPath)...)
	allErrs = append(allErrs, ValidateDNSProxy(cfg.DNS, fldPath.Child("dns"))...)
	allErrs = append(allErrs, validateAgentMetrics(cfg.Metrics, cfg.DNS, fldPath.Child("metrics"), known && cfg.NodeNetwork == "")...)
	if m := cfg.Metrics; known && m != nil && m.InternalNetwork != "" && !slices.Contains(networks, m.InternalNetwork) {
		allErrs = append(allErrs, fielderrors.Invalid(fldPath.Child("metrics", "internalNetwork"), m.InternalNetwork, "must be one of networks or the node network"))
	}
	switch cfg.Hibernation {
	case "", firewallv1alpha1.HibernationRelease, firewallv1alpha1.HibernationKeep:
	default:
		allErrs = append(allErrs, fielderrors.NotSupported(fldPath.Child("hibernation"), cfg.Hibernation,
			[]firewallv1alpha1.HibernationPolicy{firewallv1alpha1.HibernationRelease, firewallv1alpha1.HibernationKeep}))
	}
	return allErrs
}

// malformedTimeouts names the timeout that is no duration, which the decoder's
// own error (from metav1.Duration) does not.
func malformedTimeouts(raw []byte, fldPath *field.Path) field.ErrorList {
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(js, &doc) != nil {
		return nil
	}
	var allErrs field.ErrorList
	for _, name := range []string{"createTimeout", "healthTimeout"} {
		value, ok := doc[name]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(value, &s) == nil {
			if _, err := time.ParseDuration(s); err == nil {
				continue
			}
		} else {
			s = string(value)
		}
		allErrs = append(allErrs, field.Invalid(fldPath.Child(name), strict.Excerpt(s), "must be a duration such as 20m or 1h30m"))
	}
	return allErrs
}
