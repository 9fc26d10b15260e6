// Package constants holds the names that more than one part of the extension
// shares: the extension types, the objects the extension creates in seed and
// shoot, and the labels and annotations it sets. It imports nothing of the
// extension but its API groups, so that webhooks, the garden admission, the
// registration generator and the controllers can all use it without importing
// each other.
package constants

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// Extension types, as shoots name them in spec.extensions.
const (
	// FirewallExtensionType drives the shoot's firewall.
	FirewallExtensionType = "firewall"
	// ACLExtensionType restricts access to the shoot's kube-apiserver.
	ACLExtensionType = "acl"
)

// FirewallReadyTimeout is how long, by default, a `firewall` Extension's
// reconcile waits for the firewall to forward with its rules. The
// registration asks gardenlet to wait a minute longer (reconcileTimeout), so
// that the shoot shows the extension's error, which names what is missing.
const FirewallReadyTimeout = 15 * time.Minute

// The extension's client-side limits of requests to the seed's kube-apiserver
// by default (--kube-api-qps, --kube-api-burst; the chart's kubeAPI values):
// benchmarks run the controllers with them, as the binary does.
const (
	KubeAPIQPS   = 100
	KubeAPIBurst = 130
)

// The client-side limits of the extension's requests for firewall credentials
// by default (--credentials-kube-api-qps, --credentials-kube-api-burst; the
// chart's kubeAPI.credentials values): each boot token takes 35 access
// reviews first, so at --kube-api-qps a seed's firewalls got their machines
// at 150 a minute.
const (
	CredentialsKubeAPIQPS   = 300
	CredentialsKubeAPIBurst = 400
)

// Names of the `firewall` extension in the seed and in the shoot.
const (
	// FirewallDeploymentName is the name of the shoot's FirewallDeployment in the seed.
	FirewallDeploymentName = "firewall"
	// LabelFirewallDeployment selects the shoot's FirewallSets and Firewalls.
	LabelFirewallDeployment = firewallv1alpha1.GroupName + "/deployment"
	// AgentServiceAccountName is the agent's ServiceAccount in the shoot
	// (namespace kube-system) and, as ShootAccessName, the shoot access
	// secret Gardener's TokenRequestor keeps filled with its token.
	AgentServiceAccountName = "firewall-agent"
	// ShootAccessName is the shoot access secret's name without Gardener's prefix.
	ShootAccessName = AgentServiceAccountName
	// ShootAccessSecretName is the shoot access secret in the shoot namespace of
	// the seed (Gardener's prefix shoot-access- and ShootAccessName).
	ShootAccessSecretName = "shoot-access-" + ShootAccessName
	// ShootNamespace is the shoot namespace of the policies, monitors and the
	// bootstrap kubeconfigs delivered after a migration.
	ShootNamespace = firewallv1alpha1.ClusterwideNetworkPolicyNamespace
	// ShootManagedResourceName is the ManagedResource (class shoot) that keeps
	// the CRDs, the namespace and the agent's RBAC in the shoot.
	ShootManagedResourceName = "extension-firewall-shoot"
	// MetricsManagedResourceName is the ManagedResource (class shoot) that
	// keeps one EndpointSlice per firewall of the metrics Service in the
	// shoot, with the address its agent reports in the seed.
	MetricsManagedResourceName = "extension-firewall-metrics"
	// EndpointSliceManagedBy is the endpointslice.kubernetes.io/managed-by
	// of those slices, so that the EndpointSlice controller leaves them alone.
	EndpointSliceManagedBy = "gardener-extension-firewall.metal-firewall.io"
	// ManagedResourceOrigin marks the ManagedResources this extension creates.
	ManagedResourceOrigin = "gardener-extension-firewall"
	// AgentShootRoleName is the agent's Role in the shoot namespace ShootNamespace.
	AgentShootRoleName = "firewall-agent"
	// AgentShootClusterRoleName is the agent's ClusterRole in the shoot (reading Services).
	AgentShootClusterRoleName = "firewall.metal-firewall.io:agent"
	// DroptailerClusterRoleName lets the shoot's drop receiver review tokens.
	DroptailerClusterRoleName = "firewall.metal-firewall.io:droptailer"
	// DropReceiverName is the drop receiver's Deployment, Service and
	// ServiceAccount in the shoot namespace ShootNamespace.
	DropReceiverName = "firewall-drop"
	// DropReceiverPortName and DropReceiverPort are its Service port, where
	// the agents send their batches.
	DropReceiverPortName = "https"
	DropReceiverPort     = 8443
	// DropReceiverServerName is the name the receiver's serving certificate
	// carries and the agents verify it for (they send to a pod address).
	DropReceiverServerName = DropReceiverName + "." + ShootNamespace + ".svc"
	// DropReceiverTLSSecretName is the receiver's serving certificate in the
	// shoot namespace ShootNamespace.
	DropReceiverTLSSecretName = "firewall-drop-tls"
	// DropReceiverCAConfigMapName is the CA bundle the agents verify the
	// receiver with, in the shoot namespace ShootNamespace, key
	// DropReceiverCAKey.
	DropReceiverCAConfigMapName = "firewall-drop-ca"
	DropReceiverCAKey           = "bundle.crt"
	// SecretsManagerIdentity names the extension's secrets in the seed's
	// shoot namespaces (the drop receiver's CA and certificate), apart from
	// gardenlet's.
	SecretsManagerIdentity = "extension-firewall"
	// AgentShootPolicyName is the shoot's ValidatingAdmissionPolicy (and its
	// binding) that refuses the agent any token and any EndpointSlice.
	AgentShootPolicyName = "firewall-agent.metal-firewall.io"
	// MetalStackPolicyGroup is the API group of metal-stack's firewall-
	// controller, whose ClusterwideNetworkPolicies (version v1) the agent
	// enforces too.
	MetalStackPolicyGroup = "metal-stack.io"
	// MetalStackMonitorGroup is the API group of metal-stack's
	// firewall-controller-manager, whose FirewallMonitor (version v2) the
	// agent keeps current in shoots that hold that kind.
	MetalStackMonitorGroup = MetalStackFirewallGroup
	// MetalStackFirewallGroup and MetalStackFirewallVersion are the API of
	// firewall-controller-manager (FirewallDeployment, FirewallSet, Firewall,
	// FirewallMonitor), v0.6.1.
	MetalStackFirewallGroup   = "firewall.metal-stack.io"
	MetalStackFirewallVersion = "v2"
	// AgentCSRClusterRoleName is the seed ClusterRole that lets an agent request
	// its client certificate.
	AgentCSRClusterRoleName = "gardener-extension-firewall:agent-csr"
)

// The shoot's maintenance window and the `firewall` Extension.
const (
	// AnnotationForceUpdate ("true") on a `firewall` Extension applies a
	// firewall update held back for the maintenance window (image, agent
	// version) at the next reconcile; the extension removes it then.
	AnnotationForceUpdate = firewallv1alpha1.GroupName + "/force-update"
	// ConditionFirewallUpdatePending on a `firewall` Extension is True while
	// an update that would roll the firewall waits for the maintenance window.
	ConditionFirewallUpdatePending = "FirewallUpdatePending"
)

// Labels on the seed objects the extension creates per firewall (bootstrap
// token Secrets, agent RBAC, delivered secrets in the shoot).
const (
	// LabelFirewallNamespace is the shoot namespace of the firewall.
	LabelFirewallNamespace = firewallv1alpha1.GroupName + "/namespace"
	// LabelFirewallName is the firewall's name.
	LabelFirewallName = firewallv1alpha1.GroupName + "/name"
)

// Names of the `acl` extension in the seed.
const (
	// ACLManagedResourceName is the per-shoot ManagedResource in the shoot namespace.
	ACLManagedResourceName = "extension-acl"
	// ACLSharedManagedResourceName is the ManagedResource of the shared
	// HTTP-CONNECT EnvoyFilter in each ingress namespace.
	ACLSharedManagedResourceName = "acl-http-connect"
	// DefaultIngressNamespace is used when no Service in the seed matches a Gateway's selector.
	DefaultIngressNamespace = "istio-ingress"
	// GardenerTLSTerminationSuffix ends the name of Gardener's per-shoot
	// EnvoyFilter in an ingress namespace (gardener's
	// apiserverexposure.IstioTLSTerminationEnvoyFilterSuffix; a test keeps the two equal).
	GardenerTLSTerminationSuffix = "-istio-tls-termination"
	// ACLPolicyHashAnnotation is set on Gardener's per-shoot EnvoyFilters to
	// make the webhook inject the current policy.
	ACLPolicyHashAnnotation = "acl.metal-firewall.io/policy-hash"
	// IngressNamespaceLabel and IngressNamespaceRole select Gardener's Istio ingress namespaces.
	IngressNamespaceLabel = "gardener.cloud/role"
	IngressNamespaceRole  = "istio-ingress"
)

// gardener-extension-provider-metal's firewall, which stands aside in shoots
// with a `firewall` Extension (pkg/webhook/providerfirewall).
const (
	// ShootNamespaceFirewallLabel is the label gardenlet sets on the shoot
	// namespaces of shoots that name the `firewall` extension type
	// (Gardener's LabelExtensionPrefix and the type); the webhook is scoped to them.
	ShootNamespaceFirewallLabel = "extensions.gardener.cloud/" + FirewallExtensionType
	// AnnotationHeldReplicas on firewall-controller-manager's FirewallDeployment
	// keeps the replicas its writer (provider-metal) asked for while the
	// webhook holds them at 0: what they go back to when the `firewall`
	// Extension goes.
	AnnotationHeldReplicas = firewallv1alpha1.GroupName + "/held-replicas"
	// ProviderFirewallDeploymentName is the name of provider-metal's
	// FirewallDeployment (firewall.metal-stack.io/v2) in the shoot namespace.
	ProviderFirewallDeploymentName = "firewall"
)

// ProviderFirewallDeploymentGVK is firewall-controller-manager's FirewallDeployment, the
// kind of provider-metal's firewall, read as unstructured (FCM's module stays out of ours).
var ProviderFirewallDeploymentGVK = schema.GroupVersionKind{Group: MetalStackFirewallGroup, Version: MetalStackFirewallVersion, Kind: "FirewallDeployment"}
