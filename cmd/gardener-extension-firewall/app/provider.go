package app

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/local"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine/metal"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/metalclient"
)

// Machine providers (--machine-provider).
const (
	ProviderMetal = "metal"
	ProviderLocal = "local"
)

// MetalOptions are the flags of the metal provider.
type MetalOptions struct {
	URL      string
	HMACFile string
	AuthType string
	Timeout  time.Duration
	// AllowHTTP accepts an http:// URL: the HMAC and the answers (machines,
	// firewall rules) would cross the network in the clear.
	AllowHTTP bool
	// AnnounceBy is how the agents announce a new distance to the fabric.
	AnnounceBy string
}

// AddFlags registers the metal provider's flags.
func (o *MetalOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.URL, "metal-api-url", "", "metal provider: the metal-api's base URL, e.g. https://metal.example.com/metal")
	fs.StringVar(&o.HMACFile, "metal-api-hmac-file", "", "metal provider: file holding the metal-api HMAC key (a mounted Secret; read on every request, so a rotated key needs no restart)")
	fs.StringVar(&o.AuthType, "metal-api-hmac-auth-type", metalclient.AuthTypeEdit, fmt.Sprintf("metal provider: the HMAC auth type of the key, one of %v; allocating and freeing needs %s", metalclient.AuthTypes, metalclient.AuthTypeEdit))
	fs.DurationVar(&o.Timeout, "metal-api-timeout", metal.DefaultTimeout, "metal provider: longest wait for one metal-api call")
	fs.StringVar(&o.AnnounceBy, "metal-distance-announce-by", agentconfigv1alpha1.AnnounceByReset, fmt.Sprintf("metal provider: how the firewalls announce a new distance to the fabric: %q (a reset of their BGP sessions; for leaves whose FRR predates 10.3) or %q (a BGP update, no session down; leaves with FRR 10.3 or later)", agentconfigv1alpha1.AnnounceByReset, agentconfigv1alpha1.AnnounceByUpdate))
	fs.BoolVar(&o.AllowHTTP, "metal-api-allow-http", false, "metal provider: accept an http:// --metal-api-url (requests and answers unencrypted; a lab, or a metal-api reached only through a trusted network)")
}

// validate says everything that is wrong with the metal flags, at once.
func (o *MetalOptions) validate() error {
	var errs []error
	if o.URL == "" {
		errs = append(errs, errors.New("--metal-api-url is required"))
	} else if u, err := metalclient.ParseURL(o.URL); err != nil {
		errs = append(errs, fmt.Errorf("--metal-api-url: %w", err))
	} else if u.Scheme == "http" && !o.AllowHTTP {
		errs = append(errs, fmt.Errorf("--metal-api-url %q: must be https (the HMAC key's requests and the metal-api's answers would cross the network in the clear); --metal-api-allow-http accepts http", o.URL))
	}
	if o.HMACFile == "" {
		errs = append(errs, errors.New("--metal-api-hmac-file is required"))
	} else if _, err := metalclient.KeyFile(o.HMACFile)(); err != nil {
		errs = append(errs, fmt.Errorf("--metal-api-hmac-file: %w", err))
	}
	if !slices.Contains(metalclient.AuthTypes, o.AuthType) {
		errs = append(errs, fmt.Errorf("--metal-api-hmac-auth-type %q is none of %v", o.AuthType, metalclient.AuthTypes))
	}
	if o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--metal-api-timeout %s must be positive", o.Timeout))
	}
	if !slices.Contains(agentconfigv1alpha1.AnnounceByValues, o.AnnounceBy) {
		errs = append(errs, fmt.Errorf("--metal-distance-announce-by %q is neither %q nor %q", o.AnnounceBy, agentconfigv1alpha1.AnnounceByReset, agentconfigv1alpha1.AnnounceByUpdate))
	}
	return errors.Join(errs...)
}

// NewMachineProvider sets up the provider the flags ask for. Its error says
// everything that is missing; the binary then runs on with a provider that
// reports it on every Firewall (machine.Unavailable), so that the acl
// extension is not taken down with the firewall's.
func NewMachineProvider(o *Options) (machine.Provider, error) {
	switch o.MachineProvider {
	case ProviderMetal:
		if err := o.Metal.validate(); err != nil {
			return nil, err
		}
		return metal.New(metal.Options{URL: o.Metal.URL, AuthType: o.Metal.AuthType, Key: metalclient.KeyFile(o.Metal.HMACFile), Timeout: o.Metal.Timeout, AnnounceBy: o.Metal.AnnounceBy})
	case ProviderLocal:
		return local.New(local.Options{
			StateDir: o.LocalStateDir, AgentPath: o.LocalAgentPath,
			InternalNetNS: o.LocalInternalNS, ExternalNetNS: o.LocalExternalNS,
		})
	}
	return nil, fmt.Errorf("--machine-provider %q is not supported", o.MachineProvider)
}

// MachineProviderOrUnavailable is NewMachineProvider, or, when the provider
// cannot be set up, a provider that reports why on every Firewall: the acl
// extension must not go down with the firewall's provider.
func MachineProviderOrUnavailable(o *Options) machine.Provider {
	provider, err := NewMachineProvider(o)
	if err != nil {
		ctrl.Log.Error(err, "The machine provider is not set up; firewalls get no machines until its flags are fixed, the acl extension runs on", "provider", o.MachineProvider)
		return machine.Unavailable{Name: o.MachineProvider, Err: err}
	}
	return provider
}
