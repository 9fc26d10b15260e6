// Package machine is the interface between the firewall manager and whatever
// hands out machines: metal-api for real firewalls, network namespaces on
// this host for local setups and tests.
package machine

import (
	"context"
	"os"
	"time"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// Machine is what a provider knows about the machine behind a Firewall.
type Machine struct {
	// ID is the provider's ID; it survives restarts and migrations.
	ID string
	// Name is the Firewall's name the machine was created for.
	Name string
	// Tags identify the Firewall (see Tags) so that a machine whose ID was
	// never written into the Firewall's status is still found.
	Tags map[string]string
	// Provisioned tells whether the machine has booted its image.
	Provisioned bool
	// AllocatedAt is when the machine was allocated.
	AllocatedAt time.Time
	// Message is the provider's last word on the machine, e.g. why it failed.
	Message string
	// Liveliness, ImageID, CrashLoop and LastEvent are what the metal-api
	// says about the machine; a provider without them leaves them empty.
	Liveliness string
	ImageID    string
	CrashLoop  bool
	LastEvent  *Event
	// ExternalIPs are the machine's addresses in external networks: its
	// traffic to the internet leaves with them unless a SNAT rule says else.
	ExternalIPs []string
}

// Event is a provisioning event of a machine.
type Event struct {
	Event   string
	Time    time.Time
	Message string
}

// InDoubtError says that a Create failed in a way that leaves open whether
// the machine was allocated (a timeout, a lost connection, a server error):
// the manager must not create another before Find has had time to see it.
type InDoubtError struct {
	Err error
}

func (e *InDoubtError) Error() string {
	return "the machine may have been allocated: " + e.Err.Error()
}

func (e *InDoubtError) Unwrap() error { return e.Err }

// File is one resolved userdata file.
type File struct {
	Path    string
	Content []byte
	Mode    os.FileMode
}

// Provider creates, finds and deletes machines. Implementations must make
// Find reliable, because the manager only creates a machine when Find
// returns none: that is what keeps a Firewall from ever getting a second one.
type Provider interface {
	// Find returns the Firewall's machine: by status.machineStatus.machineID
	// first, then by name and tags. It returns nil, nil when there is none.
	Find(ctx context.Context, fw *firewallv1alpha1.Firewall) (*Machine, error)
	// Create allocates a machine for the Firewall with the given userdata.
	Create(ctx context.Context, fw *firewallv1alpha1.Firewall, userdata []File) (*Machine, error)
	// Delete releases the machine; deleting a machine that is gone is no error.
	Delete(ctx context.Context, id string) error
}

// Tag keys that identify a Firewall on its machine.
const (
	TagNamespace = firewallv1alpha1.GroupName + "/namespace"
	TagName      = firewallv1alpha1.GroupName + "/name"
	TagProject   = firewallv1alpha1.GroupName + "/project"
)

// Tags are the tags a machine for fw carries. They deliberately leave out
// the UID: a Firewall restored on another seed has a new UID but must find
// the same machine.
func Tags(fw *firewallv1alpha1.Firewall) map[string]string {
	return map[string]string{
		TagNamespace: fw.Namespace,
		TagName:      fw.Name,
		TagProject:   fw.Spec.Project,
	}
}

// MatchesTags tells whether a machine carries all of fw's tags.
func MatchesTags(m *Machine, fw *firewallv1alpha1.Firewall) bool {
	for k, v := range Tags(fw) {
		if m.Tags[k] != v {
			return false
		}
	}
	return m.Name == fw.Name
}
