package lastgood

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/atomicfile"
)

// formatVersion is written with the ruleset; a file of another version is
// refused rather than guessed at, and the boot step closes instead.
const formatVersion = 1

// MaxBytes bounds what Load reads: a ruleset of some 100,000 set elements
// takes about 20 MiB.
const MaxBytes = 256 << 20

// file is what is on disk.
type file struct {
	Version int              `json:"version"`
	Ruleset *ruleset.Ruleset `json:"ruleset"`
}

// Save replaces the file at path with rs, readable by root only, atomically
// and durably: after a crash or power loss the file holds the old or the
// new ruleset, complete.
func Save(path string, rs *ruleset.Ruleset) error {
	data, err := json.Marshal(file{Version: formatVersion, Ruleset: rs})
	if err != nil {
		return fmt.Errorf("last good ruleset: %w", err)
	}
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("last good ruleset %s: %w", path, err)
	}
	return nil
}

// Load reads the ruleset Save wrote. An absent file is an error that
// matches fs.ErrNotExist. A file that is too large, not complete JSON, of
// another format version, or that does not describe the agent's own table
// with a forward chain dropping by default is refused with an error naming
// what is wrong.
func Load(path string) (*ruleset.Ruleset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("last good ruleset: %w", err)
	}
	defer func() { _ = f.Close() }()
	if info, err := f.Stat(); err == nil && info.Size() > MaxBytes {
		return nil, fmt.Errorf("last good ruleset %s: larger than %d bytes", path, MaxBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("last good ruleset %s: %w", path, err)
	}
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("last good ruleset %s: larger than %d bytes", path, MaxBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var in file
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("last good ruleset %s: decoding: %w", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("last good ruleset %s: trailing data after the ruleset", path)
	}
	if in.Version != formatVersion {
		return nil, fmt.Errorf("last good ruleset %s: version: %d, this agent reads %d", path, in.Version, formatVersion)
	}
	if err := check(in.Ruleset); err != nil {
		return nil, fmt.Errorf("last good ruleset %s: %w", path, err)
	}
	return in.Ruleset, nil
}

// check refuses a ruleset that is not the agent's table or that would
// forward what no rule accepts.
func check(rs *ruleset.Ruleset) error {
	if rs == nil {
		return errors.New("ruleset: missing")
	}
	if rs.Table != ruleset.TableName {
		return fmt.Errorf("ruleset.Table: %q, the agent's table is %q", rs.Table, ruleset.TableName)
	}
	for i, c := range rs.Chains {
		if c == nil {
			return fmt.Errorf("ruleset.Chains[%d]: missing", i)
		}
		if c.Hook == "forward" && c.PolicyDrop {
			return nil
		}
	}
	return errors.New("ruleset.Chains: no forward chain with policy drop")
}
