package cloudprofile

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// maxListed bounds the allowed values named in one error.
const maxListed = 10

// Validate checks the firewall's partition, size, image and agent version
// against the CloudProfileConfig, as provider-metal does for its own
// firewall: an empty list in the CloudProfile allows every value. On an
// update (old is not nil) only changed values are checked: an image the
// operator has since removed from the CloudProfile must not block every later
// write of a Shoot that still runs it, Gardener's own ones included.
func Validate(fw, old *firewallv1alpha1.FirewallExtensionConfig, cfg *Config, fldPath *field.Path) field.ErrorList {
	if old == nil {
		old = &firewallv1alpha1.FirewallExtensionConfig{}
	} else if old.Partition == fw.Partition && old.Size == fw.Size && old.Image == fw.Image && old.AgentVersion == fw.AgentVersion {
		return nil
	}
	mcp, p := cfg.find(fw.Partition)
	if mcp == nil && old.Partition == fw.Partition {
		return nil
	}
	if mcp == nil {
		var partitions []string
		for _, mcp := range cfg.MetalControlPlanes {
			for name := range mcp.Partitions {
				partitions = append(partitions, name)
			}
		}
		return field.ErrorList{notOffered(fldPath.Child("partition"), fw.Partition, "partitions", partitions)}
	}
	var errs field.ErrorList
	if fw.Size != old.Size && len(p.FirewallTypes) > 0 && !slices.Contains(p.FirewallTypes, fw.Size) {
		errs = append(errs, notOffered(fldPath.Child("size"), fw.Size, "firewallTypes of partition "+fw.Partition, p.FirewallTypes))
	}
	if fw.Image != old.Image && len(mcp.FirewallImages) > 0 && !slices.Contains(mcp.FirewallImages, fw.Image) {
		errs = append(errs, notOffered(fldPath.Child("image"), fw.Image, "firewallImages", mcp.FirewallImages))
	}
	if fw.AgentVersion != "" && fw.AgentVersion != old.AgentVersion && len(mcp.FirewallControllerVersions) > 0 {
		versions := make([]string, 0, len(mcp.FirewallControllerVersions))
		for _, v := range mcp.FirewallControllerVersions {
			versions = append(versions, v.Version)
		}
		if !slices.Contains(versions, fw.AgentVersion) {
			errs = append(errs, notOffered(fldPath.Child("agentVersion"), fw.AgentVersion, "firewallControllerVersions", versions))
		}
	}
	return errs
}

// notOffered names the value and at most maxListed of the allowed ones, so
// a CloudProfile with hundreds of images does not make a huge answer.
func notOffered(fldPath *field.Path, value, listName string, allowed []string) *field.Error {
	allowed = slices.Clone(allowed)
	slices.Sort(allowed)
	allowed = slices.Compact(allowed)
	if len(allowed) == 0 {
		return field.Invalid(fldPath, value, fmt.Sprintf("the CloudProfile offers no %s", listName))
	}
	shown := allowed[:min(len(allowed), maxListed)]
	msg := fmt.Sprintf("not in the CloudProfile's %s: %s", listName, strings.Join(shown, ", "))
	if more := len(allowed) - len(shown); more > 0 {
		msg += fmt.Sprintf(" and %d more", more)
	}
	return field.Invalid(fldPath, value, msg)
}
