package main

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
)

// Prefix starts the name of everything a demo creates on the host: its
// folder in the temp dir (which holds the control planes' data, the
// machines' roots and all logs), and its network namespaces (with the veth
// links inside them). `make demo-down` finds leftovers by it.
const Prefix = "fwdemo-"

// run names what one demo run creates: fwdemo-<id>.
type run struct {
	id string
	// base is the temp dir when the program started; the demo points TMPDIR
	// into its own folder later.
	base string
}

// anyRun stands for every demo run: what demo-down removes.
func anyRun() run { return run{base: os.TempDir()} }

func newRun() (run, error) {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		return run{}, err
	}
	return run{id: hex.EncodeToString(b), base: os.TempDir()}, nil
}

// name is fwdemo-<id>, the run's folder name and the start of its namespaces.
func (r run) name() string { return Prefix + r.id }

// dir is the run's folder; the control planes' TMPDIR points into it.
func (r run) dir() string { return filepath.Join(r.base, r.name()) }

// netns names one of the run's network namespaces.
func (r run) netns(suffix string) string { return r.name() + "-" + suffix }

// machinePrefix starts the names of the run's firewall machines' namespaces.
func (r run) machinePrefix() string { return r.name() + "-m" }

// owns tells whether a folder or namespace name belongs to this run; the
// anyRun owns every demo's.
func (r run) owns(name string) bool {
	if r.id == "" {
		return strings.HasPrefix(name, Prefix)
	}
	return name == r.name() || strings.HasPrefix(name, r.name()+"-")
}
