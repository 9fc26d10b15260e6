package validator

import (
	"context"
	"fmt"
	"strings"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	gardenerutils "github.com/gardener/gardener/pkg/utils/gardener"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/admission/cloudprofile"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// ValidateFirewallAgainstCloudProfile checks every enabled `firewall`
// extension of a syntactically valid shoot against the shoot's CloudProfile
// or NamespacedCloudProfile; on an update (oldShoot not nil) only what
// changed. A CloudProfile without metal-stack's CloudProfileConfig checks
// nothing. The error is for a CloudProfile that cannot be read.
func ValidateFirewallAgainstCloudProfile(ctx context.Context, reader client.Reader, shoot, oldShoot *gardencorev1beta1.Shoot) (field.ErrorList, error) {
	olds := map[string]*firewallv1alpha1.FirewallExtensionConfig{}
	if oldShoot != nil {
		for _, c := range firewallConfigs(oldShoot) {
			olds[c.fldPath.String()] = c.config
		}
	}
	var configs []firewallConfig
	for _, c := range firewallConfigs(shoot) {
		if old := olds[c.fldPath.String()]; old == nil || cloudProfileFieldsChanged(old, c.config) {
			configs = append(configs, c)
		}
	}
	if len(configs) == 0 {
		return nil, nil
	}
	profile, err := gardenerutils.GetCloudProfile(ctx, reader, shoot)
	if err != nil {
		return nil, fmt.Errorf("reading the shoot's CloudProfile: %w", err)
	}
	cfg, err := cloudprofile.Decode(profile.Spec.ProviderConfig)
	if err != nil || cfg == nil {
		return nil, err
	}
	var errs field.ErrorList
	for _, c := range configs {
		errs = append(errs, cloudprofile.Validate(c.config, olds[c.fldPath.String()], cfg, c.fldPath)...)
	}
	return errs, nil
}

// cloudProfileFieldsChanged says whether an update touches what the
// CloudProfile constrains; if not, the CloudProfile need not be read.
func cloudProfileFieldsChanged(old, fw *firewallv1alpha1.FirewallExtensionConfig) bool {
	return old.Partition != fw.Partition || old.Size != fw.Size || old.Image != fw.Image || old.AgentVersion != fw.AgentVersion
}

type firewallConfig struct {
	fldPath *field.Path
	config  *firewallv1alpha1.FirewallExtensionConfig
}

// firewallConfigs decodes the providerConfig of every enabled `firewall`
// extension; invalid ones are left out.
func firewallConfigs(shoot *gardencorev1beta1.Shoot) []firewallConfig {
	var configs []firewallConfig
	enabledExtensions(shoot, constants.FirewallExtensionType, func(raw []byte, fldPath *field.Path) field.ErrorList {
		if cfg, errs := validation.DecodeFirewallExtensionConfigAt(raw, fldPath); len(errs) == 0 {
			configs = append(configs, firewallConfig{fldPath, cfg})
		}
		return nil
	})
	return configs
}

// RollWarnings reports, on an update, each change that replaces the
// firewall machine or its agent: allowed, but the shoot owner should know.
func RollWarnings(oldShoot, shoot *gardencorev1beta1.Shoot) []string {
	old := map[string]*firewallv1alpha1.FirewallExtensionConfig{}
	for _, c := range firewallConfigs(oldShoot) {
		old[c.fldPath.String()] = c.config
	}
	var warnings []string
	for _, c := range firewallConfigs(shoot) {
		before, ok := old[c.fldPath.String()]
		if !ok {
			continue
		}
		changed := func(name, from, to, when string) {
			if from != to {
				warnings = append(warnings, fmt.Sprintf("%s changes from %q to %q: a new firewall machine replaces the running one %s", c.fldPath.Child(name), from, to, when))
			}
		}
		const now, maintenance = "when the shoot is reconciled", "in the shoot's maintenance window"
		changed("size", before.Size, c.config.Size, now)
		changed("partition", before.Partition, c.config.Partition, now)
		changed("project", before.Project, c.config.Project, now)
		changed("networks", strings.Join(before.Networks, ","), strings.Join(c.config.Networks, ","), now)
		changed("image", before.Image, c.config.Image, maintenance)
		// The agent version is not part of the machine: with the self-update on,
		// the running agent switches to it; nothing is replaced.
		if before.AgentVersion != c.config.AgentVersion {
			warnings = append(warnings, fmt.Sprintf("%s changes from %q to %q: the firewall's agent updates itself to it %s where the operator turned the self-update on; the machine stays",
				c.fldPath.Child("agentVersion"), before.AgentVersion, c.config.AgentVersion, maintenance))
		}
	}
	return warnings
}
