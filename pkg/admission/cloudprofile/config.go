// Package cloudprofile checks a shoot's `firewall` providerConfig against what
// the operator offers in the shoot's CloudProfile. It reads metal-stack's
// CloudProfileConfig without depending on gardener-extension-provider-metal.
package cloudprofile

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

const (
	// APIVersion and Kind name metal-stack's CloudProfileConfig in a
	// CloudProfile's spec.providerConfig.
	APIVersion = "metal.provider.extensions.gardener.cloud/v1alpha1"
	Kind       = "CloudProfileConfig"
)

// Config mirrors the few fields this extension reads of
// github.com/metal-stack/gardener-extension-provider-metal/pkg/apis/metal/v1alpha1.CloudProfileConfig.
// It is their object: fields this type lacks are ignored when decoding.
type Config struct {
	APIVersion         string                       `json:"apiVersion"`
	Kind               string                       `json:"kind"`
	MetalControlPlanes map[string]MetalControlPlane `json:"metalControlPlanes"`
}

// MetalControlPlane mirrors the upstream MetalControlPlane.
type MetalControlPlane struct {
	Partitions map[string]Partition `json:"partitions"`
	// FirewallImages empty allows every image, as upstream.
	FirewallImages             []string                    `json:"firewallImages,omitempty"`
	FirewallControllerVersions []FirewallControllerVersion `json:"firewallControllerVersions,omitempty"`
}

// Partition mirrors the upstream Partition.
type Partition struct {
	// FirewallTypes are the sizes of firewall machines; empty allows every size.
	FirewallTypes []string `json:"firewallTypes"`
}

// FirewallControllerVersion mirrors the upstream FirewallControllerVersion:
// the firewall's agent versions the operator offers.
type FirewallControllerVersion struct {
	Version string `json:"version"`
}

// Decode returns the metal CloudProfileConfig in a CloudProfile's
// spec.providerConfig, or nil when there is none (a CloudProfile of another
// provider): then only the providerConfig's syntax is checked.
func Decode(providerConfig *runtime.RawExtension) (*Config, error) {
	if providerConfig == nil || len(providerConfig.Raw) == 0 {
		return nil, nil
	}
	// The type first: another provider's config is none of our business,
	// even if it does not fit Config.
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(providerConfig.Raw, &meta); err != nil || meta.APIVersion != APIVersion || meta.Kind != Kind {
		return nil, nil //nolint:nilerr // not metal-stack's: syntax checks only
	}
	cfg := &Config{}
	if err := json.Unmarshal(providerConfig.Raw, cfg); err != nil {
		return nil, fmt.Errorf("the CloudProfile's spec.providerConfig (%s): %w", Kind, err)
	}
	return cfg, nil
}

// find returns the control plane that has the partition.
func (c *Config) find(partition string) (*MetalControlPlane, *Partition) {
	for _, mcp := range c.MetalControlPlanes {
		if p, ok := mcp.Partitions[partition]; ok {
			return &mcp, &p
		}
	}
	return nil, nil
}
