package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// MachineRecord is what the local provider records of a machine in
// <state dir>/<id>/machine.json.
type MachineRecord struct {
	ID    string `json:"id"`
	NetNS string `json:"netns"`
	PID   int    `json:"pid"`
}

// Machines reads the records of the local provider's machines.
func Machines(stateDir string) ([]MachineRecord, error) {
	entries, err := os.ReadDir(stateDir)
	if err != nil {
		return nil, err
	}
	var out []MachineRecord
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(stateDir, e.Name(), "machine.json"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var rec MachineRecord
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, fmt.Errorf("machine %s: %w", e.Name(), err)
		}
		out = append(out, rec)
	}
	return out, nil
}

// WaitForMachine waits until the local provider has recorded a machine.
func WaitForMachine(ctx context.Context, stateDir string, timeout time.Duration) (MachineRecord, error) {
	var rec MachineRecord
	err := WaitUntil(ctx, timeout, func(context.Context) error {
		recs, err := Machines(stateDir)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			return errors.New("no machine recorded in " + stateDir)
		}
		rec = recs[len(recs)-1]
		return nil
	})
	return rec, err
}

// MachineRoot is the folder the machine's agent runs chrooted in: its files
// (config, kubeconfigs, keys) are below it at their paths on the machine.
func MachineRoot(stateDir string, rec MachineRecord) string {
	return filepath.Join(stateDir, rec.ID, "root")
}

// AgentLog is the machine's firewall-agent output.
func AgentLog(stateDir string, rec MachineRecord) string {
	return filepath.Join(stateDir, rec.ID, "agent.log")
}

// AgentLogs is the log of every machine's agent in stateDir, each under a
// header naming the machine: what a failed spec prints.
func AgentLogs(stateDir string) string {
	recs, err := Machines(stateDir)
	if err != nil {
		return fmt.Sprintf("no agent logs: %v\n", err)
	}
	var b strings.Builder
	for _, rec := range recs {
		data, err := os.ReadFile(AgentLog(stateDir, rec))
		if err != nil {
			fmt.Fprintf(&b, "agent log of %s: %v\n", rec.ID, err)
			continue
		}
		fmt.Fprintf(&b, "agent log of %s:\n%s\n", rec.ID, data)
	}
	return b.String()
}
