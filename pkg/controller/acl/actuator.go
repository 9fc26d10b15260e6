// Package acl is the controller of the extension type `acl`: it restricts who may reach a
// shoot's kube-apiserver through the seed's Istio ingress gateway.
//
// Per shoot it deploys, through a seed ManagedResource in the shoot namespace, an
// EnvoyFilter `acl-<shoot namespace>` into each Istio ingress namespace that serves the
// shoot's kube-apiserver (found through the `kube-apiserver*` Gateways' selectors) or its
// observability components (Plutono, Prometheus, Alertmanager, Vali, OpenTelemetry collector:
// Gateways in the shoot namespace for hosts on the seed's ingress domain, TLS terminated on
// the ingress gateway, each host with its own filter chain). Where
// Gardener's own per-shoot EnvoyFilter `<shoot namespace>-istio-tls-termination` exists and
// the mutating webhook has injected the policy into it, the shoot's own EnvoyFilter is not
// needed there and is left out, so the policy is evaluated once. Per ingress namespace it
// keeps one shared EnvoyFilter `acl-http-connect` (ManagedResource in that namespace) for the
// HTTP-CONNECT listeners, built from all acl Extensions.
package acl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	"github.com/gardener/gardener/extensions/pkg/controller/extension"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/gardener/gardener/pkg/utils/managedresources"
	"github.com/go-logr/logr"
	istioapinetworkingv1alpha3 "istio.io/api/networking/v1alpha3"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	istionetworkingv1beta1 "istio.io/client-go/pkg/apis/networking/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/providerstatus"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

const (
	// maxSharedEnvoyFilterBytes keeps the shared EnvoyFilter below etcd's default request limit (1.5 MiB).
	maxSharedEnvoyFilterBytes = 1400 << 10
	// kubeAPIServerGatewayPrefix starts the names of the shoot's kube-apiserver Gateways
	// (kube-apiserver, kube-apiserver-wildcard).
	kubeAPIServerGatewayPrefix = "kube-apiserver"
)

// Config is what the operator sets.
type Config struct {
	// AlwaysAllowedCIDRs are allowed for every shoot in addition to the computed ones.
	AlwaysAllowedCIDRs []string
	// Limits bound what a shoot owner may configure.
	Limits validation.Limits
}

type actuator struct {
	client client.Client
	// reader reads around the cache: the shared filter must see every status written before.
	reader client.Reader
	config Config
	always []netip.Prefix
	// shared coalesces the rebuilds of the shared filters (shared.go).
	shared sharedRebuilds
}

// NewActuator returns the actuator of the acl extension. reader should be uncached (the manager's
// API reader); the shared HTTP-CONNECT filter is rebuilt from what it lists.
func NewActuator(c client.Client, reader client.Reader, cfg Config) (extension.Actuator, error) {
	var always []netip.Prefix
	for _, s := range cfg.AlwaysAllowedCIDRs {
		p, err := validation.ParseCIDR(s)
		if err != nil {
			return nil, fmt.Errorf("operator's always-allowed CIDR %q: %w", s, err)
		}
		always = append(always, p)
	}
	return &actuator{client: c, reader: reader, config: cfg, always: always}, nil
}

// ingress is one Istio ingress namespace that serves the shoot's kube-apiserver.
type ingress struct {
	namespace string
	selector  map[string]string
	hosts     []string
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
	always, err := a.alwaysAllowed(ctx, ex.Namespace, cluster)
	if err != nil {
		return err
	}
	ingresses, err := a.ingresses(ctx, ex.Namespace, seedIngressDomain(cluster.Seed))
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

	// The webhook injects patches for all of the shoot's hosts (a patch for a host another gateway
	// serves matches nothing); the shoot's own EnvoyFilter names only the namespace's hosts.
	injectedPatches, err := envoy.NetworkFilterPatches(status.Hosts, shoot)
	if err != nil {
		return err
	}
	registry := managedresources.NewRegistry(kubernetes.SeedScheme, kubernetes.SeedCodec, kubernetes.SeedSerializer)
	for _, in := range ingresses {
		injected, err := a.triggerInjection(ctx, log, in.namespace, ex.Namespace, hash(status), injectedPatches)
		if err != nil {
			return err
		}
		if injected {
			log.Info("Policy lives in Gardener's EnvoyFilter, the shoot's own one is not needed", "namespace", in.namespace)
			continue
		}
		ef, err := envoy.ShootEnvoyFilter(in.namespace, in.selector, in.hosts, shoot)
		if err != nil {
			return err
		}
		if ef != nil {
			if err := registry.Add(ef); err != nil {
				return err
			}
		}
	}
	data, err := registry.SerializedObjects()
	if err != nil {
		return err
	}
	if err := managedresources.CreateForSeed(ctx, a.client, ex.Namespace, constants.ACLManagedResourceName, false, data); err != nil {
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
	if err := managedresources.DeleteForSeed(ctx, a.client, ex.Namespace, constants.ACLManagedResourceName); err != nil {
		return err
	}
	if wait {
		timeoutCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if err := managedresources.WaitUntilDeleted(timeoutCtx, a.client, ex.Namespace, constants.ACLManagedResourceName); err != nil {
			return err
		}
	}
	if err := a.deleteManagedResourceSecrets(ctx, ex.Namespace, constants.ACLManagedResourceName); err != nil {
		return err
	}
	namespaces, err := a.knownIngressNamespaces(ctx, ex)
	if err != nil {
		return err
	}
	// Without a providerStatus the Extension counts for nobody: not for the shared filter that
	// other shoots rebuild, not for the webhook. After Migrate the object stays until gardenlet
	// deletes it.
	if ex.Status.ProviderStatus != nil {
		patch := client.MergeFrom(ex.DeepCopy())
		ex.Status.ProviderStatus = nil
		if err := a.client.Status().Patch(ctx, ex, patch); err != nil {
			return fmt.Errorf("clearing the status: %w", err)
		}
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

// alwaysAllowed are the CIDRs no shoot can lock out: seed nodes and pods, shoot nodes (spec and
// status, all IP families), the shoot's egress CIDRs (shoot status and Infrastructure status) and
// the operator's.
func (a *actuator) alwaysAllowed(ctx context.Context, namespace string, cluster *extensionscontroller.Cluster) ([]netip.Prefix, error) {
	var cidrs []string
	if cluster.Seed != nil {
		n := cluster.Seed.Spec.Networks
		if n.Nodes != nil {
			cidrs = append(cidrs, splitCIDRs(*n.Nodes)...)
		}
		cidrs = append(cidrs, splitCIDRs(n.Pods)...)
	}
	if cluster.Shoot != nil {
		cidrs = append(cidrs, shootCIDRs(cluster.Shoot)...)
	}
	infras := &extensionsv1alpha1.InfrastructureList{}
	if err := a.client.List(ctx, infras, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing Infrastructures: %w", err)
	}
	for _, infra := range infras.Items {
		cidrs = append(cidrs, infra.Status.EgressCIDRs...)
		if infra.Status.Networking != nil {
			cidrs = append(cidrs, infra.Status.Networking.Nodes...)
		}
	}
	out := slices.Clone(a.always)
	for _, c := range cidrs {
		p, err := validation.ParseCIDR(c)
		if err != nil {
			// Not the shoot owner's input: skip what Gardener or a provider wrote in a form we do not know.
			continue
		}
		out = append(out, p)
	}
	return envoy.Merge(out), nil
}

func shootCIDRs(shoot *gardencorev1beta1.Shoot) []string {
	var cidrs []string
	if shoot.Spec.Networking != nil && shoot.Spec.Networking.Nodes != nil {
		cidrs = append(cidrs, splitCIDRs(*shoot.Spec.Networking.Nodes)...)
	}
	if n := shoot.Status.Networking; n != nil {
		cidrs = append(cidrs, n.Nodes...)
		cidrs = append(cidrs, n.EgressCIDRs...)
	}
	return cidrs
}

func splitCIDRs(s string) []string {
	var out []string
	for _, c := range strings.Split(s, ",") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// seedIngressDomain is the seed's wildcard ingress domain (ingress.<seed domain>), under which
// Gardener exposes the shoot's observability components; empty if the seed has none.
func seedIngressDomain(seed *gardencorev1beta1.Seed) string {
	if seed == nil || seed.Spec.Ingress == nil {
		return ""
	}
	return strings.TrimPrefix(seed.Spec.Ingress.Domain, "*.")
}

// gatewayHosts are the hosts of a Gateway in the shoot namespace that the shoot's policy covers:
// every concrete host of the kube-apiserver Gateways, and the concrete hosts on the seed's ingress
// domain of any other Gateway (the observability components: gu-, p-, au-, v-, otc-<project>--<shoot>).
// Wildcard hosts are left out: their filter chain may be shared with other shoots.
func gatewayHosts(gw *istionetworkingv1beta1.Gateway, ingressDomain string) []string {
	apiserver := strings.HasPrefix(gw.Name, kubeAPIServerGatewayPrefix)
	var hosts []string
	for _, s := range gw.Spec.Servers {
		for _, h := range s.Hosts {
			// A Gateway host may carry a namespace ("ns/host"); the SNI is the part after it.
			if i := strings.LastIndex(h, "/"); i >= 0 {
				h = h[i+1:]
			}
			if h == "" || strings.Contains(h, "*") {
				continue
			}
			if apiserver || (ingressDomain != "" && strings.HasSuffix(h, "."+ingressDomain)) {
				hosts = append(hosts, h)
			}
		}
	}
	return hosts
}

// ingresses finds the Istio ingress namespaces that serve the shoot's kube-apiserver and
// observability Gateways: the namespaces of the Services that a Gateway's selector matches
// (default istio-ingress, zonal istio-ingress--<zone>, exposure classes), with the hosts each
// serves there.
func (a *actuator) ingresses(ctx context.Context, namespace, ingressDomain string) ([]ingress, error) {
	gateways := &istionetworkingv1beta1.GatewayList{}
	if err := a.client.List(ctx, gateways, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing Gateways: %w", err)
	}
	byNamespace := map[string]*ingress{}
	for _, gw := range gateways.Items {
		if len(gw.Spec.Selector) == 0 {
			continue
		}
		hosts := gatewayHosts(gw, ingressDomain)
		if len(hosts) == 0 && !strings.HasPrefix(gw.Name, kubeAPIServerGatewayPrefix) {
			continue
		}
		services := &corev1.ServiceList{}
		if err := a.client.List(ctx, services, client.MatchingLabels(gw.Spec.Selector)); err != nil {
			return nil, fmt.Errorf("listing ingress gateway Services: %w", err)
		}
		namespaces := []string{}
		for _, svc := range services.Items {
			namespaces = append(namespaces, svc.Namespace)
		}
		if len(namespaces) == 0 {
			namespaces = append(namespaces, constants.DefaultIngressNamespace)
		}
		for _, ns := range namespaces {
			in := byNamespace[ns]
			if in == nil {
				in = &ingress{namespace: ns, selector: gw.Spec.Selector}
				byNamespace[ns] = in
			}
			in.hosts = append(in.hosts, hosts...)
		}
	}
	var out []ingress
	for _, in := range byNamespace {
		sort.Strings(in.hosts)
		in.hosts = slices.Compact(in.hosts)
		out = append(out, *in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].namespace < out[j].namespace })
	return out, nil
}

func ingressNamespaces(ingresses []ingress) []string {
	var out []string
	for _, in := range ingresses {
		out = append(out, in.namespace)
	}
	return out
}

// triggerInjection touches Gardener's per-shoot EnvoyFilter so that the webhook injects the
// current policy, and tells whether the stored object now carries it.
func (a *actuator) triggerInjection(ctx context.Context, log logr.Logger, ingressNamespace, shootNamespace, policyHash string, wanted []*istioapinetworkingv1alpha3.EnvoyFilter_EnvoyConfigObjectPatch) (bool, error) {
	ef := &istionetworkingv1alpha3.EnvoyFilter{}
	if err := a.client.Get(ctx, client.ObjectKey{Namespace: ingressNamespace, Name: shootNamespace + constants.GardenerTLSTerminationSuffix}, ef); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	if len(wanted) == 0 {
		return false, a.stripInjection(ctx, log, ingressNamespace, shootNamespace)
	}
	// Only a missing or stale injection needs the webhook. The annotation alone is not compared:
	// gardener-resource-manager may drop it when it re-applies its object, which must not cause a
	// write every time.
	if !envoy.SameInjection(ef.Spec.ConfigPatches, wanted) {
		patch := client.MergeFrom(ef.DeepCopy())
		if ef.Annotations == nil {
			ef.Annotations = map[string]string{}
		}
		ef.Annotations[constants.ACLPolicyHashAnnotation] = policyHash
		if err := a.client.Patch(ctx, ef, patch); err != nil {
			return false, fmt.Errorf("touching Gardener's EnvoyFilter %s/%s: %w", ef.Namespace, ef.Name, err)
		}
	}
	// The patch response is the object as stored, after the webhook (if it is up) mutated it.
	return envoy.SameInjection(ef.Spec.ConfigPatches, wanted), nil
}

// stripInjection removes what the webhook injected into Gardener's EnvoyFilter. The controller
// does it itself so that no stale policy remains when the webhook is down.
func (a *actuator) stripInjection(ctx context.Context, log logr.Logger, ingressNamespace, shootNamespace string) error {
	ef := &istionetworkingv1alpha3.EnvoyFilter{}
	if err := a.client.Get(ctx, client.ObjectKey{Namespace: ingressNamespace, Name: shootNamespace + constants.GardenerTLSTerminationSuffix}, ef); err != nil {
		return client.IgnoreNotFound(err)
	}
	stripped := envoy.StripInjected(ef.Spec.ConfigPatches)
	if len(stripped) == len(ef.Spec.ConfigPatches) && ef.Annotations[constants.ACLPolicyHashAnnotation] == "" {
		return nil
	}
	log.Info("Removing the policy from Gardener's EnvoyFilter", "namespace", ingressNamespace, "name", ef.Name)
	ef.Spec.ConfigPatches = stripped
	delete(ef.Annotations, constants.ACLPolicyHashAnnotation)
	return a.client.Update(ctx, ef)
}

// deleteManagedResourceSecrets deletes the immutable data Secrets of a deleted ManagedResource
// (managedresource-<name>-<hash>). gardener-resource-manager's garbage collector would remove
// them too, later; the extension leaves nothing behind in namespaces it shares with others.
func (a *actuator) deleteManagedResourceSecrets(ctx context.Context, namespace, name string) error {
	secrets := &corev1.SecretList{}
	if err := a.client.List(ctx, secrets, client.InNamespace(namespace)); err != nil {
		return err
	}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		if strings.HasPrefix(s.Name, managedresources.SecretPrefix+name+"-") {
			if err := client.IgnoreNotFound(a.client.Delete(ctx, s)); err != nil {
				return err
			}
		}
	}
	return nil
}

func newStatus(p *validation.Policy, s envoy.ShootPolicy, always []netip.Prefix, ingresses []ingress) *v1alpha1.ExtensionStatus {
	st := &v1alpha1.ExtensionStatus{
		APIVersion:         v1alpha1.SchemeGroupVersion,
		Kind:               "ExtensionStatus",
		Action:             p.Action,
		Type:               p.Type,
		RuleCIDRs:          envoy.Strings(p.CIDRs),
		AlwaysAllowedCIDRs: envoy.Strings(always),
		AllowedCIDRs:       envoy.Strings(s.Allowed),
		DeniedCIDRs:        envoy.Strings(s.Denied),
	}
	if p.Action == v1alpha1.ActionAllow {
		st.DeniedCIDRs = nil
	} else {
		st.AllowedCIDRs = nil
	}
	for _, in := range ingresses {
		st.IngressNamespaces = append(st.IngressNamespaces, in.namespace)
		st.Hosts = append(st.Hosts, in.hosts...)
		if st.Selectors == nil {
			st.Selectors = map[string]map[string]string{}
		}
		st.Selectors[in.namespace] = in.selector
	}
	sort.Strings(st.Hosts)
	st.Hosts = slices.Compact(st.Hosts)
	return st
}

func (a *actuator) updateStatus(ctx context.Context, ex *extensionsv1alpha1.Extension, st *v1alpha1.ExtensionStatus) error {
	raw, err := providerstatus.Encode(st)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(ex.DeepCopy())
	ex.Status.ProviderStatus = raw
	if err := a.client.Status().Patch(ctx, ex, patch); err != nil {
		return fmt.Errorf("reporting the allow-list: %w", err)
	}
	return nil
}

func hash(st *v1alpha1.ExtensionStatus) string {
	raw, _ := json.Marshal(st)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}
