// Package userdata removes what metal-stack's installer leaves of a
// machine's userdata once the machine has booted from it: the userdata holds
// the agent's boot credential, and the installer keeps it on disk (as the
// Ignition config it ran, and in the allocation it records).
package userdata

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/atomicfile"
)

// allocationField is the userdata's field in the recorded allocation
// (metal-stack api v2 MachineAllocation.userdata, written as protoyaml).
const allocationField = "userdata"

// maxAllocationBytes bounds the allocation file read: the userdata is at
// most 32 KiB, the rest of an allocation far less than this.
const maxAllocationBytes = 4 << 20

// Remove deletes the userdata copies below root ("/" on a machine): the
// Ignition config and the metal-hammer's copy, and the userdata field of the
// recorded allocation, whose other fields stay. It returns the paths it
// changed; what is not there is no error. Every copy is tried.
func Remove(root string) ([]string, error) {
	var changed []string
	var errs []error
	for _, p := range []string{agentconfigv1alpha1.IgnitionUserdataPath, agentconfigv1alpha1.MetalUserdataPath} {
		path := filepath.Join(root, p)
		switch err := os.Remove(path); {
		case err == nil:
			changed = append(changed, path)
		case !errors.Is(err, fs.ErrNotExist):
			errs = append(errs, err)
		}
	}
	path := filepath.Join(root, agentconfigv1alpha1.MachineAllocationPath)
	switch did, err := removeField(path); {
	case err != nil:
		errs = append(errs, fmt.Errorf("%s: %w", path, err))
	case did:
		changed = append(changed, path)
	}
	return changed, errors.Join(errs...)
}

// removeField rewrites the allocation without its userdata field, keeping
// the file's mode; it reports whether it had one.
func removeField(path string) (bool, error) {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if info.Size() > maxAllocationBytes {
		return false, fmt.Errorf("%d bytes, more than an allocation (%d)", info.Size(), maxAllocationBytes)
	}
	data, err := os.ReadFile(path) //nolint:gosec // metal-stack's fixed path below the given root
	if err != nil {
		return false, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return false, fmt.Errorf("not YAML: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return false, errors.New("not a YAML mapping")
	}
	m := doc.Content[0]
	found := false
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == allocationField {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			found = true
			break
		}
	}
	if !found {
		return false, nil
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return false, err
	}
	if err := enc.Close(); err != nil {
		return false, err
	}
	return true, atomicfile.Write(path, out.Bytes(), info.Mode().Perm())
}
