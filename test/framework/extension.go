package framework

import (
	"context"
	"fmt"
	"time"

	resourcemanagerconfigv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/gardener/gardener/pkg/controller/tokenrequestor"
	"github.com/gardener/gardener/pkg/resourcemanager/controller/managedresource"
	resourcemanagerpredicate "github.com/gardener/gardener/pkg/resourcemanager/predicate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	aclcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/acl"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/csrapprover"
	firewallcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/firewall"
	firewallmanager "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewallmachine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/metricsendpoints"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// ExtensionOptions say what StartExtension runs besides the firewall job.
type ExtensionOptions struct {
	// Provider makes the firewall machines. Give both seeds of a migration
	// the same one: one infrastructure (as metal-api is) behind both.
	Provider machine.Provider
	// InDoubtSettle, when set, is how long the manager only looks for a
	// machine after a Create whose outcome is unknown.
	InDoubtSettle time.Duration
	// AgentUpdatePublicKey, when set, is the operator's release key
	// (--agent-update-public-key): agents update themselves, and a new
	// machine may get the agent through its userdata (agentSHA512).
	AgentUpdatePublicKey []byte
	// ACL, when set, also runs the acl controller with this operator config
	// (without its webhook: the controller then deploys each shoot's own
	// EnvoyFilter, which is enough where no Gardener EnvoyFilters exist).
	ACL *aclcontroller.Config
	// MaxReplacements is how many Firewalls a set creates in place of
	// failed ones (--max-replacements); 0 replaces none.
	MaxReplacements int32
}

// HeartbeatTimeout is how old an agent's last report may be for its
// Firewall to count as connected; the agent reports every 10 s.
const HeartbeatTimeout = time.Minute

// StartExtension runs in the seed what a seed runs for this extension: the
// extension (firewall controller, firewall manager with bootstrap
// credentials and shoot delivery, CSR approver, the metrics' EndpointSlices, optionally the acl
// controller), and Gardener's own TokenRequestor and ManagedResource
// controllers, as the shoot's gardener-resource-manager runs them. stop kills it and returns the
// manager's error, if it failed.
func StartExtension(seed, shoot *testenv.ControlPlane, opts ExtensionOptions) (stop func() error, err error) {
	mgr, err := manager.New(seed.Config, manager.Options{
		Scheme:     SeedScheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := addControllers(ctx, mgr, seed, shoot, opts); err != nil {
		cancel()
		return nil, err
	}

	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() error {
		cancel()
		if err := <-done; err != nil {
			return fmt.Errorf("extension in %s: %w", seed.Name, err)
		}
		return nil
	}, nil
}

func addControllers(ctx context.Context, mgr manager.Manager, seed, shoot *testenv.ControlPlane, opts ExtensionOptions) error {
	direct, err := client.New(seed.Config, client.Options{Scheme: SeedScheme})
	if err != nil {
		return err
	}
	if err := client.IgnoreAlreadyExists(direct.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: BootNamespace}})); err != nil {
		return err
	}
	// As the binary: each firewall Extension holds a worker while it waits for its firewall.
	if err := firewallcontroller.AddToManagerWithOptions(ctx, mgr, firewallcontroller.AddOptions{
		Controller: controller.Options{MaxConcurrentReconciles: 10},
		Config:     firewallcontroller.Config{BootNamespace: BootNamespace, AgentUpdatePublicKey: opts.AgentUpdatePublicKey, NodeNetworks: firewallcontroller.NodeNetworksOf(opts.Provider)},
	}); err != nil {
		return err
	}
	if err := (&csrapprover.Reconciler{BootNamespace: BootNamespace}).AddToManager(mgr); err != nil {
		return err
	}
	if err := (&metricsendpoints.Reconciler{}).AddToManager(mgr); err != nil {
		return err
	}
	if err := firewallmanager.AddToManager(mgr, firewallmanager.Options{
		Provider: opts.Provider, HeartbeatTimeout: HeartbeatTimeout, InDoubtSettle: opts.InDoubtSettle, MaxReplacements: opts.MaxReplacements,
		Bootstrap: &firewallmachine.Bootstrap{
			Server: seed.Config.Host, CAData: seed.Config.CAData, Namespace: BootNamespace,
			SecretNames: []string{constants.ShootAccessSecretName},
			Delivery:    &credentials.ShootDelivery{SeedClient: mgr.GetClient()},
		},
	}); err != nil {
		return err
	}
	if opts.ACL != nil {
		if err := aclcontroller.AddToManagerWithOptions(ctx, mgr, aclcontroller.AddOptions{Config: *opts.ACL}); err != nil {
			return err
		}
	}
	shootCluster, err := cluster.New(shoot.Config, func(o *cluster.Options) { o.Scheme = kubernetes.ShootScheme })
	if err != nil {
		return err
	}
	if err := mgr.Add(shootCluster); err != nil {
		return err
	}
	if err := (&tokenrequestor.Reconciler{Class: ptr.To(resourcesv1alpha1.ResourceManagerClassShoot)}).AddToManager(mgr, mgr, shootCluster); err != nil {
		return err
	}
	// The shoot's gardener-resource-manager: it applies the extension's
	// shoot ManagedResource (the agent's CRDs and RBAC) into the shoot.
	return (&managedresource.Reconciler{
		Config: resourcemanagerconfigv1alpha1.ManagedResourceControllerConfig{
			ConcurrentSyncs: ptr.To(2), SyncPeriod: &metav1.Duration{Duration: time.Minute}, ManagedByLabelValue: ptr.To("gardener"),
		},
		ClassFilter: resourcemanagerpredicate.NewClassFilter(""),
	}).AddToManager(mgr, mgr, shootCluster)
}
