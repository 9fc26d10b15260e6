package metalimage

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// Paths of the installer's own files.
const (
	// UserdataPath is where the metal-hammer hands the userdata over; the
	// installer renames it to IgnitionConfigPath and runs ignition on it
	// (os-installer pkg/installer/os/common/process_userdata.go).
	UserdataPath       = "/etc/metal/userdata"
	IgnitionConfigPath = "/config.ign"
	// MachineAllocationPath is the allocation the installer keeps, userdata
	// included (os-installer api/v1/api.go, pkg/installer/config.go).
	MachineAllocationPath = "/etc/metal/machine-allocation.yaml"
)

// Installation is what the installer does to a firewall's root, in its order
// (os-installer pkg/installer/installer.go): Before are the files it writes
// before it processes the userdata (hostname, network, FRR, nftables, the
// allocation it persists, the userdata itself); then it runs
// `ignition -oem file -stage files` in / on the userdata and `systemctl
// preset-all`; After are the units it renders then, which it enables.
type Installation struct {
	Before map[string]string
	// Userdata is the userdata as the metal-hammer writes it.
	Userdata []byte
	After    map[string]string
	// Enable are the units the installer enables after writing After.
	Enable []string
}

// Install renders the installation of a firewall from its allocation.
func Install(a *Allocation) (*Installation, error) {
	userdata, err := base64.StdEncoding.DecodeString(a.UserData)
	if err != nil {
		return nil, fmt.Errorf("the allocation's user_data is not base64: %w", err)
	}
	in := &Installation{Before: map[string]string{}, Userdata: userdata, After: map[string]string{}}
	in.Before["/etc/hostname"] = a.Hostname + "\n"
	files, err := Networkd(a)
	if err != nil {
		return nil, err
	}
	for p, c := range files {
		in.Before[p] = c
	}
	if in.Before[FRRConfPath], err = FirewallFRR(a); err != nil {
		return nil, err
	}
	if in.Before[NftablesRulesPath], err = NftablesRules(a); err != nil {
		return nil, err
	}
	// The allocation the installer keeps, of which only the userdata field
	// matters here: it is the userdata again.
	var alloc strings.Builder
	fmt.Fprintf(&alloc, "hostname: %s\nproject: %s\nuserdata: %s\n", a.Hostname, a.Project, a.UserData)
	in.Before[MachineAllocationPath] = alloc.String()
	in.After["/etc/systemd/system/"+FirewallControllerUnit] = FirewallControllerService(a)
	in.After["/etc/systemd/system/"+DroptailerUnit] = DroptailerService(a)
	in.Enable = []string{DroptailerUnit, FirewallControllerUnit}
	return in, nil
}
