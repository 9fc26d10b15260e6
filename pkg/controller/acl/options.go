package acl

import (
	"github.com/spf13/pflag"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
)

// AddFlags adds the operator's settings of the acl controller to a flag set, for the binary.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&c.AlwaysAllowedCIDRs, "acl-always-allowed-cidrs", c.AlwaysAllowedCIDRs,
		"CIDRs allowed to reach every shoot's kube-apiserver in addition to the seed's and shoot's own networks")
	fs.StringSliceVar(&c.SeedEgressCIDRs, "acl-seed-egress-cidrs", c.SeedEgressCIDRs,
		"the seed's egress CIDRs, always allowed when the Istio ingress load balancer runs in ipMode Proxy (a ManagedSeed's are read from kube-system/shoot-info)")
	fs.IntVar(&c.Limits.MaxCIDRs, "acl-max-cidrs", validation.DefaultMaxCIDRs, "largest number of CIDRs in one shoot's acl rule")
}
