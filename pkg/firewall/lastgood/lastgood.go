package lastgood

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
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
	if err := writeDurably(path, data); err != nil {
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

// writeDurably writes data to a temporary file next to path (mode 0600,
// directory 0700), syncs it, renames it over path and syncs the directory.
func writeDurably(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// Temporary files of a writer that was killed are never renamed: remove them.
	stale, _ := filepath.Glob(filepath.Join(dir, "."+filepath.Base(path)+"-*"))
	for _, f := range stale {
		_ = os.Remove(f)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	return d.Sync()
}
