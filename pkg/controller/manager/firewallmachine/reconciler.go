// Package firewall reconciles a Firewall with the machine behind it: it
// creates the machine once, derives readiness from the agent's heartbeat and
// releases the machine on deletion.
package firewallmachine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
)

// Finalizer keeps a Firewall until its machine is released.
const Finalizer = firewallv1alpha1.GroupName + "/machine"

// provisioningPoll is how often a machine that has not booted yet is checked.
const provisioningPoll = 10 * time.Second

// Reconciler reconciles Firewalls.
type Reconciler struct {
	// Workers is how many objects are reconciled at once; 1 when 0.
	Workers  int
	Client   client.Client
	Provider machine.Provider
	Clock    clock.Clock
	// HeartbeatTimeout is how old the agent's last report may be for the
	// Firewall to count as connected.
	HeartbeatTimeout time.Duration
	// HealthTimeout is how long a Firewall may take to become Ready before
	// it counts as crashing.
	HealthTimeout time.Duration
	// InDoubtSettle is how long, after a Create whose outcome is unknown
	// (machine.InDoubtError), only Find is asked before another Create:
	// the provider may still be finishing the allocation. Default 2m.
	InDoubtSettle time.Duration
	// Bootstrap, when set, gives every Firewall its agent's seed identity:
	// RBAC, and a bootstrap kubeconfig in the machine's userdata.
	Bootstrap *Bootstrap
	// MachineResync is how long the provider's answer for a booted machine
	// is used before it is asked again; DefaultMachineResync when 0.
	MachineResync time.Duration
	// seen holds the provider's last answers (machinecache.go).
	seen sync.Map

	// credentials reads and writes tokens and RBAC without a cache: caching
	// every Secret of kube-system for a few writes per firewall is not worth it.
	credentials client.Client
	// sweep asks what the boot identities' groups may do in this seed; nil
	// (a unit test's fake client) asks only about the firewall's own user.
	sweep *credentials.Sweep
}

// Bootstrap is how agents reach this seed.
type Bootstrap struct {
	// Server is the seed's kube-apiserver URL as the firewall reaches it.
	Server string
	// CAData is the PEM of the CA that serves Server.
	CAData []byte
	// Namespace holds the firewalls' boot ServiceAccounts: the extension's own.
	Namespace string
	// TokenValidity is a boot token's life, within [10m, 1h].
	TokenValidity time.Duration
	// SecretNames are the Secrets of the shoot namespace an agent may read,
	// e.g. its TokenRequestor-maintained shoot access secret.
	SecretNames []string
	// Delivery, when set, hands a bootstrap kubeconfig to the agent of a
	// machine that predates its Firewall object (restored after a control
	// plane migration): its userdata only knows the old seed.
	Delivery Delivery
	// KubeAPIQPS and KubeAPIBurst are the client-side limits of the
	// requests for credentials (access reviews, tokens, RBAC), apart from
	// the manager's; the manager's when 0.
	KubeAPIQPS   float32
	KubeAPIBurst int
}

// AddToManager registers the controller.
func (r *Reconciler) AddToManager(mgr manager.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.credentials == nil {
		cfg := rest.CopyConfig(mgr.GetConfig())
		if r.Bootstrap != nil && r.Bootstrap.KubeAPIQPS > 0 {
			cfg.QPS, cfg.Burst = r.Bootstrap.KubeAPIQPS, r.Bootstrap.KubeAPIBurst
		}
		c, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
		if err != nil {
			return err
		}
		r.credentials = c
	}
	if r.sweep == nil && r.Bootstrap != nil {
		d, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
		if err != nil {
			return err
		}
		r.sweep = &credentials.Sweep{Client: r.credentials, Discovery: d}
	}
	return builder.ControllerManagedBy(mgr).Named("firewall-machine").WithOptions(controller.Options{MaxConcurrentReconciles: r.Workers}).For(&firewallv1alpha1.Firewall{}).Complete(r)
}

// Reconcile creates, watches and releases the machine behind one Firewall.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	fw := &firewallv1alpha1.Firewall{}
	if err := r.Client.Get(ctx, req.NamespacedName, fw); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if firewallv1alpha1.IsPaused(fw.Annotations) {
		log.FromContext(ctx).V(1).Info("Firewall is paused, leaving it alone")
		return reconcile.Result{}, nil
	}
	if fw.DeletionTimestamp != nil {
		r.seen.Delete(fw.UID)
		return r.delete(ctx, fw)
	}
	if errs := validation.ValidateFirewall(fw); len(errs) > 0 {
		// Retrying cannot fix the spec; the next spec change triggers again.
		return reconcile.Result{}, r.patchStatus(ctx, fw, func() {
			meta.SetStatusCondition(&fw.Status.Conditions, condition(firewallv1alpha1.ConditionCreated, false, "InvalidSpec", errs.ToAggregate().Error(), fw.Generation))
		})
	}
	if controllerutil.AddFinalizer(fw, Finalizer) {
		if err := r.Client.Update(ctx, fw); err != nil {
			return reconcile.Result{}, err
		}
	}

	if r.Bootstrap != nil && r.Bootstrap.Delivery != nil {
		// Before the machine: its agent pins the key on its first read.
		if err := r.ensureDeliveryKey(ctx, fw); err != nil {
			return reconcile.Result{}, fmt.Errorf("delivery key: %w", err)
		}
	}
	m, err := r.findMachine(ctx, fw)
	if err != nil {
		return reconcile.Result{}, r.findFailed(ctx, fw, err)
	}
	// Every agent heartbeat reconciles the Firewall, so the RBAC is only
	// written when the Firewall changed or gets its machine, not on every beat.
	if r.Bootstrap != nil && (m == nil || fw.Status.ObservedGeneration != fw.Generation) {
		if err := credentials.EnsureAgentRBAC(ctx, r.credentials, r.Bootstrap.Namespace, fw.Namespace, fw.Name, r.Bootstrap.SecretNames); err != nil {
			return reconcile.Result{}, fmt.Errorf("agent RBAC: %w", err)
		}
	}
	created := m == nil
	if m == nil {
		if wait := r.inDoubtFor(fw); wait > 0 {
			// An earlier Create may have allocated a machine that Find does
			// not show yet: a second one is worse than waiting.
			log.FromContext(ctx).Info("Not creating a machine while an earlier allocation is in doubt", "wait", wait)
			return reconcile.Result{RequeueAfter: wait}, nil
		}
		files, err := machine.ResolveUserdata(ctx, r.Client, fw)
		if err != nil {
			return reconcile.Result{}, err
		}
		if r.Bootstrap != nil {
			kubeconfig, _, err := r.bootstrapKubeconfig(ctx, fw)
			if unsafe := (&unsafeBootIdentityError{}); errors.As(err, &unsafe) {
				// No machine with a credential that could do more than its CSR;
				// the operator learns why on the Firewall.
				log.FromContext(ctx).Error(err, "Not creating the machine")
				return reconcile.Result{RequeueAfter: time.Minute}, r.patchStatus(ctx, fw, func() {
					meta.SetStatusCondition(&fw.Status.Conditions, condition(firewallv1alpha1.ConditionCreated, false, "UnsafeBootIdentity", err.Error(), fw.Generation))
				})
			}
			if err != nil {
				return reconcile.Result{}, err
			}
			files = append(files, machine.File{Path: agentconfigv1alpha1.BootstrapKubeconfigPath, Content: kubeconfig, Mode: 0o600})
		}
		if m, err = r.Provider.Create(ctx, fw, files); err != nil {
			return reconcile.Result{}, r.createFailed(ctx, fw, err)
		}
		log.FromContext(ctx).Info("Created machine", "machineID", m.ID)
	}

	wasConnected := meta.IsStatusConditionTrue(fw.Status.Conditions, firewallv1alpha1.ConditionSeedConnected)
	patch := client.MergeFrom(fw.DeepCopy())
	requeue := r.updateStatus(fw, m)
	connected := meta.IsStatusConditionTrue(fw.Status.Conditions, firewallv1alpha1.ConditionSeedConnected)
	// A machine older than its Firewall object came with a restore: its
	// userdata names the old seed, so the bootstrap kubeconfig goes to the
	// agent through the shoot.
	deliver := r.Bootstrap != nil && r.Bootstrap.Delivery != nil && !created && m.AllocatedAt.Before(fw.CreationTimestamp.Time)
	if r.Bootstrap != nil && !wasConnected && connected {
		// The agent holds its certificate: the boot credential is no longer
		// needed, and deleting its ServiceAccount revokes every token at once.
		// Deleted before the status says connected, so that a failure here is
		// retried rather than forgotten.
		if err := credentials.DeleteBootCredentials(ctx, r.credentials, r.Bootstrap.Namespace, fw.Namespace, fw.Name); err != nil {
			return reconcile.Result{}, err
		}
		if deliver {
			if err := r.withdraw(ctx, fw); err != nil {
				return reconcile.Result{}, err
			}
			log.FromContext(ctx).Info("Agent connected; withdrew its bootstrap kubeconfig from the shoot")
		}
	}
	if err := r.Client.Status().Patch(ctx, fw, patch); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, err
	}
	if deliver && !connected {
		if err := r.deliver(ctx, fw); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

func (r *Reconciler) tokenValidity() time.Duration {
	if r.Bootstrap.TokenValidity == 0 {
		return credentials.MaxBootTokenValidity
	}
	return r.Bootstrap.TokenValidity
}

// bootstrapKubeconfig mints the firewall's boot token right before its
// machine is created (or its credential delivered), so that the token's short
// life starts then; it refuses when the boot identity could do more in this
// seed than request its certificate.
func (r *Reconciler) bootstrapKubeconfig(ctx context.Context, fw *firewallv1alpha1.Firewall) ([]byte, time.Time, error) {
	held, err := credentials.BootIdentityHarmless(ctx, r.credentials, r.Bootstrap.Namespace, fw.Namespace, fw.Name)
	if err != nil {
		return nil, time.Time{}, err
	}
	if r.sweep != nil {
		groupsHold, err := r.sweep.Held(ctx, r.Bootstrap.Namespace)
		if err != nil {
			return nil, time.Time{}, err
		}
		held = append(held, groupsHold...)
	}
	if len(held) > 0 {
		return nil, time.Time{}, &unsafeBootIdentityError{user: credentials.BootUser(r.Bootstrap.Namespace, fw.Namespace, fw.Name), held: held, namespace: r.Bootstrap.Namespace}
	}
	tok, err := credentials.EnsureBootCredential(ctx, r.credentials, r.Bootstrap.Namespace, fw.Namespace, fw.Name, r.tokenValidity())
	if err != nil {
		return nil, time.Time{}, err
	}
	kubeconfig, err := credentials.BootstrapKubeconfig(r.Bootstrap.Server, r.Bootstrap.CAData, tok.Token)
	if err != nil {
		return nil, time.Time{}, err
	}
	return kubeconfig, tok.Expiration, nil
}

// updateStatus derives phase and conditions and returns when they could
// change next without an event: the agent's heartbeat ages silently.
func (r *Reconciler) updateStatus(fw *firewallv1alpha1.Firewall, m *machine.Machine) time.Duration {
	now := r.Clock.Now()
	gen := fw.Generation
	fw.Status.ObservedGeneration = gen
	fw.Status.MachineStatus = machineStatus(m)
	fw.Status.EgressIPs = egressIPs(fw, m)
	conds := &fw.Status.Conditions
	meta.SetStatusCondition(conds, condition(firewallv1alpha1.ConditionCreated, true, "MachineCreated", "machine "+m.ID, gen))
	meta.SetStatusCondition(conds, condition(firewallv1alpha1.ConditionProvisioned, m.Provisioned, "Machine", m.Message, gen))

	requeue := r.HeartbeatTimeout
	seedConnected, seedWait := r.fresh(fw.Status.AgentStatus, func(a *firewallv1alpha1.AgentStatus) *metav1.Time { return a.LastRunAgainstSeed }, now)
	meta.SetStatusCondition(conds, condition(firewallv1alpha1.ConditionSeedConnected, seedConnected, "AgentHeartbeat", heartbeatMessage(seedConnected, r.HeartbeatTimeout), gen))
	shootConnected, shootWait := r.fresh(fw.Status.AgentStatus, func(a *firewallv1alpha1.AgentStatus) *metav1.Time { return a.LastRunAgainstShoot }, now)
	meta.SetStatusCondition(conds, condition(firewallv1alpha1.ConditionConnected, shootConnected, "AgentHeartbeat", heartbeatMessage(shootConnected, r.HeartbeatTimeout), gen))
	for _, w := range []time.Duration{seedWait, shootWait} {
		if w > 0 && w < requeue {
			requeue = w
		}
	}

	_, noConnection := fw.Annotations[firewallv1alpha1.AnnotationNoControllerConnection]
	ready := m.Provisioned && (seedConnected || noConnection)
	readyMessage := "machine provisioned and agent reporting"
	switch {
	case !m.Provisioned:
		readyMessage = "machine not provisioned yet"
	case !seedConnected && !noConnection:
		readyMessage = "no agent heartbeat within " + r.HeartbeatTimeout.String()
	case noConnection && !seedConnected:
		readyMessage = "machine provisioned; agent heartbeat not required (" + firewallv1alpha1.AnnotationNoControllerConnection + ")"
	}
	if !m.Provisioned && requeue > provisioningPoll {
		// Nothing but the machine itself tells when it has booted.
		requeue = provisioningPoll
	}
	wasReady := meta.IsStatusConditionTrue(*conds, firewallv1alpha1.ConditionReady)
	reason := firewallv1alpha1.ReasonReady
	if prev := meta.FindStatusCondition(*conds, firewallv1alpha1.ConditionReady); !ready {
		reason = firewallv1alpha1.ReasonNotReady
		if prev == nil || prev.Reason == firewallv1alpha1.ReasonBooting {
			reason = firewallv1alpha1.ReasonBooting
		}
	}
	meta.SetStatusCondition(conds, condition(firewallv1alpha1.ConditionReady, ready, reason, readyMessage, gen))

	switch {
	case ready:
		fw.Status.Phase = firewallv1alpha1.FirewallPhaseRunning
	case wasReady || now.Sub(fw.CreationTimestamp.Time) > r.HealthTimeout:
		fw.Status.Phase = firewallv1alpha1.FirewallPhaseCrashing
	default:
		fw.Status.Phase = firewallv1alpha1.FirewallPhaseCreating
		if left := r.HealthTimeout - now.Sub(fw.CreationTimestamp.Time); left > 0 && left < requeue {
			requeue = left
		}
	}
	return requeue
}

// fresh tells whether the heartbeat is younger than the timeout and, if so,
// how long until it is not.
func (r *Reconciler) fresh(a *firewallv1alpha1.AgentStatus, get func(*firewallv1alpha1.AgentStatus) *metav1.Time, now time.Time) (bool, time.Duration) {
	if a == nil || get(a) == nil {
		return false, 0
	}
	left := r.HeartbeatTimeout - now.Sub(get(a).Time)
	return left > 0, left
}

func heartbeatMessage(ok bool, timeout time.Duration) string {
	if ok {
		return "agent reported within " + timeout.String()
	}
	return "no agent report within " + timeout.String()
}

func (r *Reconciler) delete(ctx context.Context, fw *firewallv1alpha1.Firewall) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(fw, Finalizer) {
		return reconcile.Result{}, nil
	}
	if fw.Status.Phase != firewallv1alpha1.FirewallPhaseDeleting {
		if err := r.patchStatus(ctx, fw, func() { fw.Status.Phase = firewallv1alpha1.FirewallPhaseDeleting }); err != nil {
			return reconcile.Result{}, err
		}
	}
	m, err := r.Provider.Find(ctx, fw)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("finding machine: %w", err)
	}
	if m != nil {
		if err := r.Provider.Delete(ctx, m.ID); err != nil {
			return reconcile.Result{}, fmt.Errorf("deleting machine %s: %w", m.ID, err)
		}
		// The finalizer goes exactly when the machine is gone, not when its
		// deletion was merely requested.
		if m, err = r.Provider.Find(ctx, fw); err != nil || m != nil {
			return reconcile.Result{RequeueAfter: 5 * time.Second}, err
		}
		log.FromContext(ctx).Info("Released machine")
	}
	if r.Bootstrap != nil {
		if err := credentials.DeleteBootCredentials(ctx, r.credentials, r.Bootstrap.Namespace, fw.Namespace, fw.Name); err != nil {
			return reconcile.Result{}, err
		}
		if err := credentials.DeleteAgentRBAC(ctx, r.credentials, fw.Namespace, fw.Name); err != nil {
			return reconcile.Result{}, err
		}
		if err := r.deleteDeliveryKey(ctx, fw); err != nil {
			return reconcile.Result{}, err
		}
	}
	controllerutil.RemoveFinalizer(fw, Finalizer)
	return reconcile.Result{}, client.IgnoreNotFound(r.Client.Update(ctx, fw))
}

func (r *Reconciler) patchStatus(ctx context.Context, fw *firewallv1alpha1.Firewall, mutate func()) error {
	patch := client.MergeFrom(fw.DeepCopy())
	mutate()
	if err := r.Client.Status().Patch(ctx, fw, patch); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

func condition(t string, ok bool, reason, message string, gen int64) metav1.Condition {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	if message == "" {
		message = reason
	}
	return metav1.Condition{Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: gen}
}

// unsafeBootIdentityError says that the seed grants a firewall's boot
// identity more than its CSR, so no token is minted.
type unsafeBootIdentityError struct {
	user, namespace string
	held            []string
}

// maxHeldNamed bounds the permissions a message names: a seed that grants
// everything would otherwise write hundreds into a condition.
const maxHeldNamed = 10

func (e *unsafeBootIdentityError) Error() string {
	held := strings.Join(e.held, ", ")
	if len(e.held) > maxHeldNamed {
		held = fmt.Sprintf("%s and %d more", strings.Join(e.held[:maxHeldNamed], ", "), len(e.held)-maxHeldNamed)
	}
	return fmt.Sprintf("refusing to mint a boot token: in this seed, %s may %s; remove the RBAC that grants it to system:serviceaccounts, system:serviceaccounts:%s or system:authenticated",
		e.user, held, e.namespace)
}
