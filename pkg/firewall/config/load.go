// Package config loads the firewall agent's configuration file: strict
// decoding, defaults and validation of the contract in
// pkg/apis/agentconfig/v1alpha1.
package config

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/util/validation/field"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/fielderrors"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/strict"
)

// MaxBytes bounds the config file; a static source with 20,000 policy items
// takes about 2 MiB.
const MaxBytes = 32 << 20

// Load reads, strictly decodes and validates the file at path. Unknown fields
// are errors. The files the agent writes must lie in the file's folder. The
// returned config has its defaults applied.
func Load(path string) (*agentconfigv1alpha1.Config, error) {
	data, err := os.ReadFile(path) //nolint:gosec // the agent's own config file, named by its admin
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return ParseInDir(data, filepath.Dir(path))
}

// Parse strictly decodes and validates a configuration document of an agent
// whose folder is agentconfigv1alpha1.Dir.
func Parse(data []byte) (*agentconfigv1alpha1.Config, error) {
	return ParseInDir(data, agentconfigv1alpha1.Dir)
}

// ParseInDir strictly decodes and validates a configuration document read
// from a file in dir, the agent's folder: the files the agent writes (its
// kubeconfigs) must lie in it. A relative dir is taken from the working
// directory.
func ParseInDir(data []byte, dir string) (*agentconfigv1alpha1.Config, error) {
	if len(data) <= MaxBytes {
		if err := agentconfigv1alpha1.CheckDigest(data); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
	}
	cfg := &agentconfigv1alpha1.Config{}
	if errs := strict.Decode(data, cfg, field.NewPath("config"), strict.Options{
		MaxBytes: MaxBytes,
		Required: "the config file is empty: it must name the sources and controllers to run",
	}); len(errs) > 0 {
		return nil, fmt.Errorf("decoding %w", errs.ToAggregate())
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("the config's folder %q: %w", dir, err)
	}
	errs := validation.Validate(cfg, dir)
	if cfg.Name == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("name is empty and the hostname is unknown: %w", err)
		}
		errs = append(errs, validation.ValidateName(host, true)...)
		cfg.Name = host
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid config: %w", fielderrors.Bound(errs, field.NewPath("config")).ToAggregate())
	}
	if m := cfg.Sources.Metal; m != nil && m.Type == "" {
		m.Type = agentconfigv1alpha1.MetalAuthTypeView
	}
	return cfg, nil
}
