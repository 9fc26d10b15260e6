package validation

import (
	"path"
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/fielderrors"
)

// FRRConfigDir is FRR's folder, the only one routing.frrConfig may name.
const FRRConfigDir = "/etc/frr"

// peerGroupName is what FRR takes as a peer group's name, bounded.
var peerGroupName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// validateRouting checks the routing section: a clean absolute path, a peer
// group name FRR takes, and the seed as the Firewall's source, which sets the
// distance.
func validateRouting(cfg *agentconfigv1alpha1.Config) field.ErrorList {
	r := cfg.Routing
	if r == nil {
		return nil
	}
	var allErrs field.ErrorList
	p := field.NewPath("routing")
	if r.FRRConfig != "" {
		// The agent rewrites this file as root: FRR's folder only.
		if errs := validateReadPath(r.FRRConfig, p.Child("frrConfig")); len(errs) > 0 {
			allErrs = append(allErrs, errs...)
		} else if path.Dir(r.FRRConfig) != FRRConfigDir {
			allErrs = append(allErrs, fielderrors.Invalid(p.Child("frrConfig"), r.FRRConfig, "must be a file in "+FRRConfigDir))
		}
	}
	if r.PeerGroup != "" && !peerGroupName.MatchString(r.PeerGroup) {
		allErrs = append(allErrs, fielderrors.Invalid(p.Child("peerGroup"), r.PeerGroup, "must be 1 to 64 letters, digits, '_', '.' or '-'"))
	}
	if r.AnnounceBy != "" && !slices.Contains(agentconfigv1alpha1.AnnounceByValues, r.AnnounceBy) {
		allErrs = append(allErrs, fielderrors.NotSupported(p.Child("announceBy"), r.AnnounceBy, agentconfigv1alpha1.AnnounceByValues))
	}
	if c := cfg.Controllers.Firewall; c == nil || c.Source != agentconfigv1alpha1.SourceSeed {
		allErrs = append(allErrs, field.Required(field.NewPath("controllers", "firewall", "source"), "routing announces the distance the seed's Firewall sets: the firewall controller must read the seed"))
	}
	return allErrs
}
