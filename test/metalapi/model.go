package metalapi

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/go-openapi/strfmt"
	"github.com/metal-stack/metal-go/api/models"
	"k8s.io/utils/ptr"
)

// machineRecord is one machine of the inventory.
type machineRecord struct {
	id, size, partition string
	created             time.Time
	changed             time.Time
	liveliness          string
	crashLoop           bool
	// events, newest first, as the metal-api lists them.
	events []event
	tags   []string
	alloc  *allocation
	// booted is set while the hardware runs the machine.
	booted bool
	// busy counts the hardware's boots and halts of the machine in flight:
	// a freed machine is not allocated again before they ended (a real one
	// reboots into metal-hammer before it waits again), so the hardware never
	// boots one machine twice at a time.
	busy int
}

type event struct {
	event, message string
	time           time.Time
}

// allocation is an allocated firewall.
type allocation struct {
	uuid, creator, name, hostname, description, project, image, userData string
	created                                                              time.Time
	sshKeys                                                              []string
	networks                                                             []*models.V1MachineNetwork
	rules                                                                *models.V1FirewallRules
}

// networkRecord is a network and the addresses handed out in it.
type networkRecord struct {
	Network
	prefix netip.Prefix
	used   map[netip.Addr]string
}

func (s *Server) addNetwork(n Network) error {
	p, err := netip.ParsePrefix(n.Prefix)
	if err != nil {
		return fmt.Errorf("network %s: %w", n.ID, err)
	}
	s.networks[n.ID] = &networkRecord{Network: n, prefix: p.Masked(), used: map[netip.Addr]string{}}
	return nil
}

// acquire hands out the next free address of the network.
func (n *networkRecord) acquire(machineID string) (string, error) {
	a := n.prefix.Addr().Next()
	for n.prefix.Contains(a) {
		a = a.Next()
		if _, used := n.used[a]; !used && n.prefix.Contains(a) {
			n.used[a] = machineID
			return a.String(), nil
		}
	}
	return "", fmt.Errorf("no free ip in network %s", n.ID)
}

func (n *networkRecord) release(machineID string) {
	for a, id := range n.used {
		if id == machineID {
			delete(n.used, a)
		}
	}
}

func (n *networkRecord) networkType() string {
	switch {
	case n.Underlay:
		return "underlay"
	case n.Private:
		return "privateprimaryunshared"
	}
	return "external"
}

func dt(t time.Time) strfmt.DateTime { return strfmt.DateTime(t) }

// firewallResponse is the metal-api's v1.FirewallResponse of a machine; the
// arrays the spec types as arrays are never null.
func (m *machineRecord) firewallResponse() *models.V1FirewallResponse {
	r := &models.V1FirewallResponse{
		ID:      ptr.To(m.id),
		Name:    m.id,
		Created: dt(m.created),
		Changed: dt(m.changed),
		Bios:    &models.V1MachineBIOS{Date: ptr.To("2024-01-01"), Vendor: ptr.To("metalapi-test"), Version: ptr.To("1.0")},
		Hardware: &models.V1MachineHardware{CPUCores: ptr.To(int32(8)), Memory: ptr.To(int64(32 << 30)), Disks: []*models.V1MachineBlockDevice{}, Nics: []*models.V1MachineNic{},
			Cpus: []*models.V1MetalCPU{}, Gpus: []*models.V1MetalGPU{}},
		Ledstate:   &models.V1ChassisIdentifyLEDState{Description: ptr.To(""), Value: ptr.To("")},
		Liveliness: ptr.To(m.liveliness),
		State:      &models.V1MachineState{Description: ptr.To(""), MetalHammerVersion: ptr.To(""), Value: ptr.To("")},
		Tags:       append([]string{}, m.tags...),
		Events:     &models.V1MachineRecentProvisioningEvents{CrashLoop: ptr.To(m.crashLoop), FailedMachineReclaim: ptr.To(false), Log: []*models.V1MachineProvisioningEvent{}},
	}
	for _, e := range m.events {
		r.Events.Log = append(r.Events.Log, &models.V1MachineProvisioningEvent{Event: ptr.To(e.event), Message: e.message, Time: dt(e.time)})
	}
	if len(m.events) > 0 {
		r.Events.LastEventTime = dt(m.events[0].time)
	}
	if a := m.alloc; a != nil {
		r.Allocation = &models.V1MachineAllocation{
			Allocationuuid: ptr.To(a.uuid),
			Created:        ptr.To(dt(a.created)),
			Creator:        ptr.To(a.creator),
			Description:    a.description,
			Hostname:       ptr.To(a.hostname),
			Name:           ptr.To(a.name),
			Project:        ptr.To(a.project),
			Reinstall:      ptr.To(false),
			Role:           ptr.To("firewall"),
			SSHPubKeys:     append([]string{}, a.sshKeys...),
			Succeeded:      ptr.To(true),
			UserData:       a.userData,
			Networks:       a.networks,
			DNSServers:     []*models.V1DNSServer{},
			NtpServers:     []*models.V1NTPServer{},
			Image: &models.V1ImageResponse{ID: ptr.To(a.image), ExpirationDate: ptr.To(dt(time.Now().AddDate(1, 0, 0))),
				Features: []string{"firewall"}, Usedby: []string{}},
			FirewallRules: a.rules,
		}
	}
	return r
}

// machineResponse is the v1.MachineResponse of a machine (same fields).
func (m *machineRecord) machineResponse() *models.V1MachineResponse {
	f := m.firewallResponse()
	return &models.V1MachineResponse{ID: f.ID, Name: f.Name, Created: f.Created, Changed: f.Changed, Bios: f.Bios, Hardware: f.Hardware,
		Ledstate: f.Ledstate, Liveliness: f.Liveliness, State: f.State, Tags: f.Tags, Events: f.Events, Allocation: f.Allocation}
}

func (n *networkRecord) response() *models.V1NetworkResponse {
	prefixes := []string{n.prefix.String()}
	dest := append([]string{}, n.DestinationPrefixes...)
	return &models.V1NetworkResponse{
		ID:                         ptr.To(n.ID),
		Name:                       n.ID,
		Prefixes:                   prefixes,
		Destinationprefixes:        dest,
		AdditionalAnnouncableCIDRs: []string{},
		Nat:                        ptr.To(n.NAT),
		Privatesuper:               ptr.To(false),
		Underlay:                   ptr.To(n.Underlay),
		Vrf:                        n.VRF,
		Projectid:                  n.ProjectID,
		Consumption:                &models.V1NetworkConsumption{},
		Usage: &models.V1NetworkUsage{AvailableIps: ptr.To(int64(n.prefix.Bits())), AvailablePrefixes: ptr.To(int64(0)), UsedIps: ptr.To(int64(len(n.used))),
			UsedPrefixes: ptr.To(int64(0))},
	}
}

// machineNetwork is what an allocation holds of one network.
func (n *networkRecord) machineNetwork(ips []string, asn int64) *models.V1MachineNetwork {
	return &models.V1MachineNetwork{
		Asn:                 ptr.To(asn),
		Destinationprefixes: append([]string{}, n.DestinationPrefixes...),
		Ips:                 ips,
		Nat:                 ptr.To(n.NAT),
		Networkid:           ptr.To(n.ID),
		Networktype:         ptr.To(n.networkType()),
		Prefixes:            []string{n.prefix.String()},
		Private:             ptr.To(n.Private),
		Underlay:            ptr.To(n.Underlay),
		Vrf:                 ptr.To(n.VRF),
	}
}
