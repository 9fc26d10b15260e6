package firewall

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	reconcilerutils "github.com/gardener/gardener/pkg/controllerutils/reconciler"
	retryutils "github.com/gardener/gardener/pkg/utils/retry"
	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// DefaultReadyTimeout is how long a reconcile waits for the firewall to
// forward with its rules. Bare metal takes minutes to boot; the
// ControllerRegistration's reconcileTimeout (how long gardenlet waits for the
// Extension) is a minute longer, so that gardenlet reports this extension's
// error, which names what is missing, rather than a bare timeout of its own.
const DefaultReadyTimeout = constants.FirewallReadyTimeout

// DefaultReadyPollInterval is how often the wait looks at the firewalls
// (through the cache): as often as gardenlet looks at the Extension.
const DefaultReadyPollInterval = 5 * time.Second

// DefaultMaxWaiting is how many reconciles may wait for their firewall at
// once. Each costs a goroutine and a few reads of the cache per poll.
const DefaultMaxWaiting = 200

// errInterrupted ends a wait that a migration, deletion or new spec of the
// Extension has overtaken: the controller handles one request per Extension at a time,
// so the wait must give way for them to run.
var errInterrupted = errors.New("interrupted")

// waitUntilForwarding blocks, the way Gardener's Worker actuator waits for
// its machines, until the firewall forwards with its rules, keeping the
// Extension's last operation Processing (gardenlet keeps waiting for a
// Processing Extension, but gives up on one that reports an error). While it
// waits, the last operation's description says what is missing. After the
// ready timeout it returns an error that says so.
func (a *actuator) waitUntilForwarding(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension, generation, written int64, hibernated bool) error {
	// A shoot going into or staying in hibernation has no nodes that need the
	// firewall, and its kube-apiserver (which the agent reads) goes away; on
	// waking up, hibernation is off again before gardenlet reconciles this.
	if hibernated {
		log.Info("Hibernation is enabled: not waiting for the firewall to forward")
		return nil
	}
	if ok, _, err := a.forwarding(ctx, ex.Namespace, written); err == nil && ok {
		return nil
	}
	release, err := a.waitSlot(ex)
	if err != nil {
		return err
	}
	defer release()
	var missing, described string
	err = retryutils.UntilTimeout(ctx, a.config.ReadyPollInterval, a.config.ReadyTimeout, func(ctx context.Context) (bool, error) {
		if err := a.interrupted(ctx, ex, generation); err != nil {
			return retryutils.SevereError(err)
		}
		ok, why, err := a.forwarding(ctx, ex.Namespace, written)
		if err != nil {
			return retryutils.MinorError(err)
		}
		if ok {
			return retryutils.Ok()
		}
		missing = why
		if missing != described {
			described = missing
			log.Info("Waiting for the firewall to forward with its rules", "missing", missing)
			a.describe(ctx, log, ex, "Waiting for the firewall to forward with its rules: "+missing)
		}
		return retryutils.MinorError(errors.New(missing))
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errInterrupted):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	case missing == "":
		return fmt.Errorf("waiting for the firewall to forward with its rules: %w", err)
	}
	return fmt.Errorf("the firewall does not forward with its rules after %s: %s", a.config.ReadyTimeout, missing)
}

// waitSlot takes one of MaxWaiting slots for ex's wait. Gardener's extension
// library cannot keep an Extension Processing without a worker (an error
// sets lastError, on which gardenlet stops waiting within 30 s), so the wait
// runs inside the reconcile, as Gardener's Worker actuator's does, on a
// worker of its own. With every slot taken, the reconcile ends with that
// error (the shoot's reconcile fails, and gardenlet retries it), and the
// Extension is reconciled again once a wait ends.
func (a *actuator) waitSlot(ex *extensionsv1alpha1.Extension) (release func(), err error) {
	if a.waiting.take(client.ObjectKeyFromObject(ex)) {
		return a.waiting.release, nil
	}
	return nil, &reconcilerutils.RequeueAfterError{
		Cause: fmt.Errorf("the firewall does not forward with its rules yet, and %d other firewalls are being waited for (--firewall-max-waiting): "+
			"this one is waited for once one of theirs ends", a.config.MaxWaiting),
		// Gardener's reconciler requeues after its resync instead; the wake-up comes first.
		RequeueAfter: a.config.ReadyTimeout,
	}
}

// interrupted tells whether the Extension was deleted, a migration was
// requested or its spec changed since this reconcile began.
func (a *actuator) interrupted(ctx context.Context, ex *extensionsv1alpha1.Extension, generation int64) error {
	current := &extensionsv1alpha1.Extension{}
	if err := a.client.Get(ctx, client.ObjectKeyFromObject(ex), current); err != nil {
		return client.IgnoreNotFound(err)
	}
	if current.DeletionTimestamp != nil {
		return fmt.Errorf("the Extension is being deleted: %w", errInterrupted)
	}
	if op := current.Annotations[v1beta1constants.GardenerOperation]; op == v1beta1constants.GardenerOperationMigrate {
		return fmt.Errorf("a migration was requested: %w", errInterrupted)
	}
	// A new spec (the owner rolled back a bad image, say) is reconciled at
	// once, not after the old one's firewall gave up.
	if current.Generation != generation {
		return fmt.Errorf("the Extension's spec changed (generation %d, this reconcile's %d): %w", current.Generation, generation, errInterrupted)
	}
	return nil
}

// forwarding reads the namespace's deployment, sets and firewalls.
func (a *actuator) forwarding(ctx context.Context, namespace string, written int64) (bool, string, error) {
	d := &firewallv1alpha1.FirewallDeployment{}
	if err := a.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.FirewallDeploymentName}, d); err != nil {
		return false, "", err
	}
	if d.Generation < written {
		// The cache still holds the deployment before this reconcile's write, whose
		// old status would say the old rules are in force.
		return false, fmt.Sprintf("FirewallDeployment %s/%s: generation %d just written, not yet seen", namespace, d.Name, written), nil
	}
	sets := &firewallv1alpha1.FirewallSetList{}
	if err := a.client.List(ctx, sets, client.InNamespace(namespace)); err != nil {
		return false, "", err
	}
	fws := &firewallv1alpha1.FirewallList{}
	if err := a.client.List(ctx, fws, client.InNamespace(namespace)); err != nil {
		return false, "", err
	}
	ok, why := forwarding(d, sets.Items, fws.Items)
	return ok, why, nil
}

// describe sets the description of the Processing last operation; failing to
// is no reason to stop waiting.
func (a *actuator) describe(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension, description string) {
	if ex.Status.LastOperation == nil {
		return
	}
	patch := client.MergeFrom(ex.DeepCopy())
	ex.Status.LastOperation.Description = description
	if err := a.client.Status().Patch(ctx, ex, patch); err != nil {
		log.Error(err, "Could not describe the wait in the last operation")
	}
}
