package acl

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	"github.com/gardener/gardener/extensions/pkg/controller/extension"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/providerstatus"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/seedhosted"
)

// Config is what the operator sets.
type Config struct {
	// AlwaysAllowedCIDRs are allowed for every shoot in addition to the computed ones.
	AlwaysAllowedCIDRs []string
	// SeedEgressCIDRs are the seed's egress CIDRs, always allowed for the shoots whose ingress
	// gateway runs behind a load balancer in ipMode Proxy (besides those a ManagedSeed reports).
	SeedEgressCIDRs []string
	// Limits bound what a shoot owner may configure.
	Limits validation.Limits
}

type actuator struct {
	client client.Client
	// reader reads around the cache: the shared filter must see every status written before.
	reader client.Reader
	// cache is what rebuilds read first (the client's informer cache; tests wrap it).
	cache  client.Reader
	config Config
	always []netip.Prefix
	// shared coalesces the rebuilds of the shared filters (shared.go).
	shared sharedRebuilds
	// decoded keeps the statuses rebuilds read, decoded (decoded.go).
	decoded decodedStatuses
	// deployed remembers what each shard's ManagedResource holds, so that a rebuild writes the
	// shards that changed only (shards.go). Rebuilds run one at a time.
	deployed map[string]string
}

// NewActuator returns the actuator of the acl extension. c reads from the informer cache, which
// the shared HTTP-CONNECT filter is rebuilt from once it shows the statuses written; reader should
// be uncached (the manager's API reader), listed while the cache lags.
func NewActuator(c client.Client, reader client.Reader, cfg Config) (extension.Actuator, error) {
	var always []netip.Prefix
	for _, s := range cfg.AlwaysAllowedCIDRs {
		p, err := cidr.Parse(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("operator's always-allowed CIDR %q: %w", s, err)
		}
		always = append(always, p)
	}
	for _, s := range cfg.SeedEgressCIDRs {
		if _, err := cidr.Parse(strings.TrimSpace(s)); err != nil {
			return nil, fmt.Errorf("operator's seed egress CIDR %q: %w", s, err)
		}
	}
	return &actuator{client: c, reader: reader, cache: c, config: cfg, always: always}, nil
}

// Reconcile validates the rule, reports what is enforced and deploys it.
func (a *actuator) Reconcile(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	var raw []byte
	if ex.Spec.ProviderConfig != nil {
		raw = ex.Spec.ProviderConfig.Raw
	}
	policy, errs := validation.Parse(raw, a.config.Limits)
	if len(errs) > 0 {
		// Nothing is changed: the last valid policy stays in force.
		return fmt.Errorf("invalid acl providerConfig: %w", errs.ToAggregate())
	}

	cluster, err := extensionscontroller.GetCluster(ctx, a.client, ex.Namespace)
	if err != nil {
		return fmt.Errorf("reading the Cluster: %w", err)
	}
	if err := seedhosted.Check(cluster, "the acl restricts who reaches the kube-apiserver at the seed's Istio ingress gateway, which a shoot without a seed is not behind"); err != nil {
		return err
	}
	ingresses, err := a.ingresses(ctx, ex.Namespace, seedIngressDomain(cluster.Seed))
	if err != nil {
		return err
	}
	always, err := a.alwaysAllowed(ctx, ex.Namespace, cluster, ingresses)
	if err != nil {
		return err
	}
	shoot := envoy.NewShootPolicy(ex.Namespace, policy, always)
	status := newStatus(policy, shoot, always, ingresses)

	previous, _ := providerstatus.Decode(ex)
	// The status first: the webhook reads it when Gardener's EnvoyFilters are touched below.
	if err := a.updateStatus(ctx, ex, status); err != nil {
		return err
	}

	filters, err := a.injectOrFilter(ctx, log, ex.Namespace, ingresses, shoot, status)
	if err != nil {
		return err
	}
	if err := newEnvoyFilters(a.client, ex.Namespace, constants.ACLManagedResourceName, filters...).Deploy(ctx); err != nil {
		return fmt.Errorf("deploying the EnvoyFilters: %w", err)
	}

	touched := ingressNamespaces(ingresses)
	if previous != nil {
		for _, ns := range previous.IngressNamespaces {
			if !slices.Contains(touched, ns) {
				// The shoot's gateway moved (e.g. to another zone): nothing of it may stay behind.
				if err := a.stripInjection(ctx, log, ns, ex.Namespace); err != nil {
					return err
				}
				touched = append(touched, ns)
			}
		}
	}
	listeners := map[string]string{}
	for _, in := range ingresses {
		listeners[in.namespace] = listenerPorts(envoy.GatewayListeners(in.targetPorts))
	}
	if a.shared.upToDate(ex.Namespace, contribution(ex.Namespace, status), touched, listeners) {
		// The shared filters hold this shoot as it is: its resync costs no rebuild.
		return nil
	}
	return a.reconcileShared(ctx, touched)
}

// Delete removes everything the extension created for the shoot, in the shoot namespace and in
// the ingress namespaces.
func (a *actuator) Delete(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	return a.cleanup(ctx, log, ex, true)
}

// ForceDelete removes everything without waiting.
func (a *actuator) ForceDelete(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	return a.cleanup(ctx, log, ex, false)
}

// Migrate removes the enforcement from this seed: the shoot's control plane moves to another
// seed with its own ingress gateway, where Restore deploys it again from the providerConfig.
func (a *actuator) Migrate(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	return a.cleanup(ctx, log, ex, true)
}

// Restore deploys the policy on the new seed; nothing but the providerConfig is needed.
func (a *actuator) Restore(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	return a.Reconcile(ctx, log, ex)
}

func (a *actuator) cleanup(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension, wait bool) error {
	own := newEnvoyFilters(a.client, ex.Namespace, constants.ACLManagedResourceName)
	if err := own.Destroy(ctx); err != nil {
		return err
	}
	if wait {
		if err := own.WaitCleanup(ctx); err != nil {
			return err
		}
	}
	namespaces, err := a.knownIngressNamespaces(ctx, ex)
	if err != nil {
		return err
	}
	// Without a providerStatus the Extension counts for nobody: not for the shared filter that
	// other shoots rebuild, not for the webhook. After Migrate the object stays until gardenlet
	// deletes it.
	if err := a.clearStatus(ctx, ex); err != nil {
		return err
	}
	for _, ns := range namespaces {
		if err := a.stripInjection(ctx, log, ns, ex.Namespace); err != nil {
			return err
		}
	}
	return a.reconcileShared(ctx, namespaces)
}

// knownIngressNamespaces are the namespaces in the status and those the Gateways point to now.
func (a *actuator) knownIngressNamespaces(ctx context.Context, ex *extensionsv1alpha1.Extension) ([]string, error) {
	var out []string
	if st, _ := providerstatus.Decode(ex); st != nil {
		out = append(out, st.IngressNamespaces...)
	}
	domain := ""
	// Best effort: the Cluster may be gone while the shoot is deleted; the status holds the rest.
	if cluster, err := extensionscontroller.GetCluster(ctx, a.client, ex.Namespace); err == nil {
		domain = seedIngressDomain(cluster.Seed)
	}
	ingresses, err := a.ingresses(ctx, ex.Namespace, domain)
	if err != nil {
		return nil, err
	}
	return append(out, ingressNamespaces(ingresses)...), nil
}
