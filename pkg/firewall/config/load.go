// Package config loads the firewall agent's configuration file: strict
// decoding, defaults and validation of the contract in
// pkg/apis/agentconfig/v1alpha1.
package config

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/util/validation/field"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/strict"
)

// MaxBytes bounds the config file; a static source with 20,000 policy items
// takes about 2 MiB.
const MaxBytes = 32 << 20

// Load reads, strictly decodes and validates the file at path. Unknown fields
// are errors. The returned config has its defaults applied.
func Load(path string) (*agentconfigv1alpha1.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return Parse(data)
}

// Parse strictly decodes and validates a configuration document.
func Parse(data []byte) (*agentconfigv1alpha1.Config, error) {
	cfg := &agentconfigv1alpha1.Config{}
	if errs := strict.Decode(data, cfg, field.NewPath("config"), strict.Options{
		MaxBytes: MaxBytes,
		Required: "the config file is empty: it must name the sources and controllers to run",
	}); len(errs) > 0 {
		return nil, fmt.Errorf("decoding %w", errs.ToAggregate())
	}
	if cfg.Name == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("name is empty and the hostname is unknown: %w", err)
		}
		cfg.Name = host
	}
	if errs := validation.Validate(cfg); len(errs) > 0 {
		return nil, fmt.Errorf("invalid config: %w", errs.ToAggregate())
	}
	return cfg, nil
}
