package snataddr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/atomicfile"
)

// DefaultRecordPath is where the agent records the addresses it added.
const DefaultRecordPath = "/var/lib/firewall-agent/snat-addresses.json"

// maxRecordBytes bounds what is read back: a few thousand addresses.
const maxRecordBytes = 1 << 20

// record is the set of addresses the manager added and has not removed.
type record struct {
	path  string
	addrs []Address
}

func loadRecord(path string) (*record, error) {
	r := &record{path: path}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the record of added SNAT addresses: %w", err)
	}
	if len(data) > maxRecordBytes {
		return nil, fmt.Errorf("record of added SNAT addresses %s: larger than %d bytes", path, maxRecordBytes)
	}
	if err := json.Unmarshal(data, &r.addrs); err != nil {
		return nil, fmt.Errorf("record of added SNAT addresses %s: %w", path, err)
	}
	return r, nil
}

func (r *record) has(a Address) bool { return slices.Contains(r.addrs, a) }

// add records a before it is added, so that a crash in between leaves at most
// a record of an address that is not there, which removal skips.
func (r *record) add(a Address) error {
	if r.has(a) {
		return nil
	}
	r.addrs = append(r.addrs, a)
	slices.SortFunc(r.addrs, compare)
	return r.save()
}

func (r *record) remove(a Address) error {
	i := slices.Index(r.addrs, a)
	if i < 0 {
		return nil
	}
	r.addrs = slices.Delete(r.addrs, i, i+1)
	return r.save()
}

// save writes the record atomically, readable by root only.
func (r *record) save() error {
	data, err := json.Marshal(r.addrs)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(r.path, data, 0o600); err != nil {
		return fmt.Errorf("record of added SNAT addresses: %w", err)
	}
	return nil
}
