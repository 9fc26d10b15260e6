// Package config loads the firewall agent's configuration file: strict
// decoding, defaults and validation of the contract in
// pkg/apis/agentconfig/v1alpha1.
package config

import (
	"errors"
	"fmt"
	"os"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/validation"
)

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
	// YAMLToJSONStrict refuses duplicate keys; kjson names the full path of an
	// unknown field, which encoding/json does not.
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("decoding config: %w", err)
	}
	strictErrs, err := kjson.UnmarshalStrict(js, cfg)
	if err != nil {
		return nil, fmt.Errorf("decoding config: %w", err)
	}
	if len(strictErrs) > 0 {
		return nil, fmt.Errorf("decoding config: %w", errors.Join(strictErrs...))
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
