// Package firewall is the controller of the `firewall` extension type: it
// turns a shoot's providerConfig into the shoot's FirewallDeployment in the
// seed, and carries the firewall across a control plane migration without a
// second machine.
package firewall

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gardener/gardener/extensions/pkg/controller/extension"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	reconcilerutils "github.com/gardener/gardener/pkg/controllerutils/reconciler"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
)

type actuator struct {
	client client.Client
	// direct reads and writes around the cache: where the cache may lag behind
	// deletions, and for the boot ServiceAccounts, which the extension may
	// list in its own namespace only (a cache would watch them cluster-wide).
	direct   client.Client
	config   Config
	clock    clock.Clock
	recorder events.EventRecorder
	// waiting holds a slot per reconcile that waits for its firewall.
	waiting *waitSlots
	// working bounds the reconciles that write at once to the operator's
	// workers (nil: no bound); the controller has more workers, for waits.
	working chan struct{}
}

// Config is what the operator sets.
type Config struct {
	// BootNamespace holds the firewalls' boot ServiceAccounts: the extension's namespace.
	BootNamespace string
	// ShootAccessTokenValidity is the life of the agent's shoot token, which
	// Gardener's TokenRequestor renews at 80 % of it; DefaultShootAccessTokenValidity when 0.
	ShootAccessTokenValidity time.Duration
	// ReadyTimeout is how long a reconcile waits for the firewall to forward
	// with its rules before it reports what is missing; DefaultReadyTimeout when 0.
	ReadyTimeout time.Duration
	// ReadyPollInterval is how often the wait looks; DefaultReadyPollInterval when 0.
	ReadyPollInterval time.Duration
	// MaxWaiting is how many reconciles may wait for their firewall at once,
	// each on a worker of its own beside the controller's; DefaultMaxWaiting when 0.
	MaxWaiting int
	// DroptailerImage holds firewall-agent, whose droptailer receives the
	// logged packets in the shoot; empty: drops stay in the firewall's
	// kernel log.
	DroptailerImage string
	// AgentUpdatePublicKey is the PEM of the Ed25519 key agent releases are
	// signed with; set, each agent gets it and turns its self-update on.
	AgentUpdatePublicKey []byte
	// NodeNetworks finds a shoot's node network where its providerConfig
	// does not name it; nil: it is not looked for (the local provider).
	NodeNetworks NodeNetworks
}

// DefaultShootAccessTokenValidity keeps every credential but the agent's own
// certificate within an hour. A control plane migration must hand the agent
// its new seed within the token's remaining life (at least 12 minutes):
// otherwise the firewall keeps forwarding with its last rules, unmanaged,
// until it is rolled. Operators with slow migrations raise it (Gardener allows 24h).
const DefaultShootAccessTokenValidity = time.Hour

// NewActuator returns the actuator of the `firewall` extension. direct is a
// client without a cache.
func NewActuator(c, direct client.Client, cfg Config) extension.Actuator {
	return newActuator(c, direct, cfg, nil)
}

// newActuator is NewActuator with a recorder of the Extension's events.
func newActuator(c, direct client.Client, cfg Config, recorder events.EventRecorder) *actuator {
	if cfg.ShootAccessTokenValidity == 0 {
		cfg.ShootAccessTokenValidity = DefaultShootAccessTokenValidity
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	if cfg.ReadyPollInterval == 0 {
		cfg.ReadyPollInterval = DefaultReadyPollInterval
	}
	if cfg.MaxWaiting <= 0 {
		cfg.MaxWaiting = DefaultMaxWaiting
	}
	return &actuator{client: c, direct: direct, config: cfg, clock: clock.RealClock{}, recorder: recorder, waiting: newWaitSlots(cfg.MaxWaiting)}
}

// Reconcile makes the shoot's FirewallDeployment match its providerConfig
// and returns once the firewall forwards with its rules (see
// waitUntilForwarding): gardenlet starts the shoot's Workers only after that.
// An invalid providerConfig changes nothing.
func (a *actuator) Reconcile(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	// However it ends: a woken reconcile hands its turn on (waitSlots).
	defer a.waiting.settle(client.ObjectKeyFromObject(ex))
	done, err := a.work(ctx)
	if err != nil {
		return err
	}
	defer done()
	// The spec this reconcile applies: status writes below refresh ex.
	generation := ex.Generation
	var raw []byte
	if ex.Spec.ProviderConfig != nil {
		raw = ex.Spec.ProviderConfig.Raw
	}
	cfg, err := validation.DecodeFirewallExtensionConfig(raw)
	if err != nil {
		return err
	}
	shoot, err := a.shootOf(ctx, ex.Namespace)
	if err != nil {
		return err
	}
	if cfg, err = a.resolveNetworks(ctx, cfg, shoot); err != nil {
		return err
	}
	hibernated := hibernationEnabled(shoot)
	maint := maintenanceOf(log, shoot, ex)
	mayRoll, why := maint.allows(a.clock.Now())
	var applied, pending []string
	if err := a.reconcileShootAccess(ctx, ex.Namespace); err != nil {
		return err
	}
	if err := a.reconcileShootResources(ctx, log, ex.Namespace); err != nil {
		return err
	}
	agentConfig, err := agentConfig(ex.Namespace, cfg.DNS, dropLogConfig(a.config.DroptailerImage, cfg.LogAcceptedConnections), cfg.Metrics, len(a.config.AgentUpdatePublicKey) > 0)
	if err != nil {
		return err
	}

	d := &firewallv1alpha1.FirewallDeployment{ObjectMeta: metav1.ObjectMeta{Name: constants.FirewallDeploymentName, Namespace: ex.Namespace}}
	result, err := controllerutil.CreateOrUpdate(ctx, a.client, d, func() error {
		// What runs now: nothing on creation or while no firewall runs, and
		// then an update rolls nothing.
		var running *firewallv1alpha1.FirewallSpec
		if d.ResourceVersion != "" && d.Spec.Replicas > 0 {
			running = d.Spec.Template.Spec.DeepCopy()
		}
		selector := map[string]string{constants.LabelFirewallDeployment: constants.FirewallDeploymentName}
		d.Spec.Strategy = cfg.Strategy
		if d.Spec.Strategy == "" {
			d.Spec.Strategy = firewallv1alpha1.StrategyRollingUpdate
		}
		want := replicas(cfg, hibernated)
		d.Spec.Replicas = want
		d.Spec.Selector = selector
		d.Spec.CreateTimeout, d.Spec.HealthTimeout, d.Spec.DistanceTimeout = cfg.CreateTimeout, cfg.HealthTimeout, cfg.DistanceTimeout
		d.Spec.Template = firewallv1alpha1.FirewallTemplateSpec{
			Metadata: firewallv1alpha1.TemplateMetadata{Labels: selector},
			Spec: firewallv1alpha1.FirewallSpec{
				Size: cfg.Size, Image: cfg.Image, Partition: cfg.Partition, Project: cfg.Project, Networks: cfg.Networks,
				FirewallTrafficSpec: cfg.FirewallTrafficSpec,
				AgentVersion:        cfg.AgentVersion,
				AgentURL:            cfg.AgentURL,
				AgentSHA256:         cfg.AgentSHA256,
				AgentSHA512:         cfg.AgentSHA512,
				UserdataContents:    agentFiles(agentConfig, a.config.AgentUpdatePublicKey),
			},
		}
		switch {
		case running == nil || want == 0:
		case mayRoll:
			applied = changes(running, &d.Spec.Template.Spec)
		default:
			pending = holdBack(&d.Spec.Template.Spec, running)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("FirewallDeployment: %w", err)
	}
	log.Info("Reconciled FirewallDeployment", "result", result, "applied", applied, "pending", pending)
	if err := a.reportUpdate(ctx, ex, maint, applied, pending, why); err != nil {
		return err
	}
	// A state is only meaningful between a Migrate and its Restore; left in
	// place, an old one would be taken for a part of the next migration's.
	if ex.Status.State != nil {
		patch := client.MergeFrom(ex.DeepCopy())
		ex.Status.State = nil
		if err := a.client.Status().Patch(ctx, ex, patch); err != nil {
			return fmt.Errorf("clearing the migration state: %w", err)
		}
	}
	done()
	if err := a.waitUntilForwarding(ctx, log, ex, generation, d.Generation, hibernated); err != nil || hibernated {
		return err
	}
	return a.holdProviderFirewall(ctx, log, ex.Namespace)
}

// work takes one of the operator's workers for a reconcile's writes (each
// serializes the shoot's ManagedResource, megabytes of compression buffers);
// done gives it back, once.
func (a *actuator) work(ctx context.Context) (done func(), err error) {
	if a.working == nil {
		return func() {}, nil
	}
	select {
	case a.working <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() { once.Do(func() { <-a.working }) }, nil
}

// Delete removes the firewalls (their machines first, through the manager's
// finalizers) and then every credential of the shoot in this seed.
func (a *actuator) Delete(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	if err := a.giveBackProviderFirewall(ctx, log, ex.Namespace); err != nil {
		return err
	}
	d := &firewallv1alpha1.FirewallDeployment{ObjectMeta: metav1.ObjectMeta{Name: constants.FirewallDeploymentName, Namespace: ex.Namespace}}
	if err := a.client.Delete(ctx, d); client.IgnoreNotFound(err) != nil {
		return err
	}
	fws := &firewallv1alpha1.FirewallList{}
	if err := a.direct.List(ctx, fws, client.InNamespace(ex.Namespace)); err != nil {
		return err
	}
	deployments := &firewallv1alpha1.FirewallDeploymentList{}
	if err := a.direct.List(ctx, deployments, client.InNamespace(ex.Namespace)); err != nil {
		return err
	}
	if n := len(fws.Items) + len(deployments.Items); n > 0 {
		log.Info("Waiting for the firewalls to be deleted", "remaining", len(fws.Items))
		return &reconcilerutils.RequeueAfterError{RequeueAfter: 5 * time.Second, Cause: fmt.Errorf("%d firewalls and deployments still exist", n)}
	}
	if err := a.deleteShootResources(ctx, ex.Namespace); err != nil {
		return err
	}
	if err := a.deleteReceiverTLS(ctx, log, ex.Namespace); err != nil {
		return err
	}
	return a.deleteCredentials(ctx, ex.Namespace)
}

// ForceDelete drops the firewall objects without waiting for machines.
func (a *actuator) ForceDelete(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	if err := a.releaseObjects(ctx, ex.Namespace); err != nil {
		return err
	}
	if err := a.deleteShootResources(ctx, ex.Namespace); err != nil {
		return err
	}
	if err := a.deleteReceiverTLS(ctx, log, ex.Namespace); err != nil {
		return err
	}
	return a.deleteCredentials(ctx, ex.Namespace)
}

func (a *actuator) deleteCredentials(ctx context.Context, namespace string) error {
	if err := credentials.DeleteBootCredentials(ctx, a.direct, a.config.BootNamespace, namespace, ""); err != nil {
		return err
	}
	if err := credentials.DeleteAgentRBAC(ctx, a.client, namespace, ""); err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: constants.ShootAccessSecretName, Namespace: namespace}}
	return client.IgnoreNotFound(a.client.Delete(ctx, secret))
}
