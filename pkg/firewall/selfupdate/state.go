package selfupdate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/atomicfile"
)

// Phases of the state file.
const (
	// PhaseTrying: the new version runs on trial from its staged file.
	PhaseTrying = "Trying"
	// PhaseHealthy: the new version applied the ruleset and is installed.
	PhaseHealthy = "Healthy"
	// PhaseFailed: the new version was rolled back; it is not tried again
	// until the source names another release.
	PhaseFailed = "Failed"
)

// State is the self-update's state file: what survives the re-exec into a
// new version, read by the new version, its watchdog and the old version
// after a rollback.
type State struct {
	Phase string `json:"phase"`
	// Version and SHA256 are the release on trial (or failed, installed).
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
	// From is the version that started the trial.
	From string `json:"from"`
	// Executable is the installed binary; Staged the new one beside it.
	Executable string `json:"executable"`
	Staged     string `json:"staged"`
	// Args are the agent's arguments, for a restart of the old version.
	Args []string `json:"args"`
	// PID is the agent's process, the same before and after the re-exec.
	PID int `json:"pid"`
	// WatchdogPID is the watchdog's process.
	WatchdogPID int       `json:"watchdogPID,omitempty"`
	Since       time.Time `json:"since"`
	Deadline    time.Time `json:"deadline"`
	// Message says why the trial failed.
	Message string `json:"message,omitempty"`
}

// maxStateBytes bounds the state file.
const maxStateBytes = 64 << 10

// ReadState reads the state file; nil without error when there is none.
func ReadState(path string) (*State, error) {
	data, err := os.ReadFile(path) //nolint:gosec // the agent's own file
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(data) > maxStateBytes {
		return nil, fmt.Errorf("the self-update state %s is larger than %d bytes", path, maxStateBytes)
	}
	st := &State{}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, fmt.Errorf("the self-update state %s: %w", path, err)
	}
	return st, nil
}

// WriteState writes the state file atomically (0600): a reader sees the old
// or the new state, never half of one.
func WriteState(path string, st *State) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600)
}
