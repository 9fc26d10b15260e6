package firewalldeployment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// templateHash hashes what needs a new machine when it changes: size, image,
// partition, project, networks, and the roll annotation's value. Rules, rate
// limits, the agent version and userdata are left out on purpose: they flow
// into the running Firewalls without replacing them.
func templateHash(d *firewallv1alpha1.FirewallDeployment) string {
	spec := d.Spec.Template.Spec
	data, _ := json.Marshal(struct {
		Size, Image, Partition, Project string
		Networks                        []string
		Roll                            string
	}{spec.Size, spec.Image, spec.Partition, spec.Project, spec.Networks, d.Annotations[firewallv1alpha1.AnnotationRoll]})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:10]
}
