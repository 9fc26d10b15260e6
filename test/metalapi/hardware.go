package metalapi

import (
	"context"
	"fmt"
	"time"

	"github.com/metal-stack/metal-go/api/models"
)

// Hardware runs the machines the metal-api allocates.
type Hardware interface {
	// Boot runs an allocated machine with its userdata and returns once it
	// phoned home, or why it could not boot.
	Boot(ctx context.Context, m BootSpec) error
	// Halt stops the machine; halting one that is not running is no error.
	Halt(machineID string) error
}

// BootSpec is what a machine boots with: its allocation.
type BootSpec struct {
	MachineID, Hostname, Project string
	Tags                         []string
	// UserData is the allocation's user_data, base64-decoded.
	UserData []byte
	Networks []*models.V1MachineNetwork
	// Firewall is the firewall as the metal-api answers for it when it
	// boots: its whole allocation, as metal-stack's installer gets it.
	Firewall *models.V1FirewallResponse
}

// boot runs the machine on the hardware in the background, as a real
// machine boots after its allocation was answered: "Phoned Home" when it
// came up, "Crashed" and a crash loop when it did not.
func (s *Server) boot(id string) {
	s.mu.Lock()
	m := s.machines[id]
	m.booted = true
	a := m.alloc
	spec := BootSpec{MachineID: id, Hostname: a.hostname, Project: a.project, Tags: append([]string{}, m.tags...), Networks: a.networks,
		Firewall: m.firewallResponse()}
	data, decodeErr := userData(a)
	spec.UserData = data
	if s.opts.Hardware != nil || decodeErr != nil {
		m.busy++
	}
	s.mu.Unlock()
	hw := s.opts.Hardware
	if hw == nil && decodeErr == nil {
		s.phoned(id, a.uuid, nil)
		return
	}
	s.inFlight.Add(1)
	go func() {
		defer s.inFlight.Done()
		err := decodeErr
		if err != nil {
			err = fmt.Errorf("user_data is not base64: %w", err)
		} else {
			err = hw.Boot(s.bootCtx, spec)
		}
		if !s.phoned(id, a.uuid, err) && err == nil {
			// Freed while it booted.
			_ = hw.Halt(id)
		}
		s.mu.Lock()
		s.machines[id].busy--
		s.mu.Unlock()
	}()
}

// halt stops a freed machine in the background, as a real one reboots
// into metal-hammer after the metal-api answered.
func (s *Server) halt(id string) {
	defer s.inFlight.Done()
	if err := s.opts.Hardware.Halt(id); err != nil {
		s.log.Error("halting a freed machine", "machine", id, "error", err)
	}
	s.mu.Lock()
	s.machines[id].busy--
	s.mu.Unlock()
}

// phoned records how the machine's boot went, if it still has the
// allocation it booted for; it reports whether it had.
func (s *Server) phoned(id, allocationUUID string, bootErr error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.machines[id]
	if m.alloc == nil || m.alloc.uuid != allocationUUID {
		return false
	}
	now := time.Now().UTC()
	m.changed = now
	if bootErr != nil {
		s.log.Error("machine did not boot", "machine", id, "error", bootErr)
		m.crashLoop = true
		m.events = append([]event{{event: "Crashed", message: bootErr.Error(), time: now}}, m.events...)
		return true
	}
	m.liveliness = "Alive"
	m.events = append([]event{{event: "Phoned Home", message: "phoned home", time: now}}, m.events...)
	return true
}
