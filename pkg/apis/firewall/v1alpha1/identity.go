package v1alpha1

import (
	"fmt"
	"strings"
)

// The identities of a firewall's agent in the seed. Namespaces and names
// cannot contain ':', so every identity parses back unambiguously.
const (
	// AgentUserPrefix starts the user name of an agent's client certificate.
	AgentUserPrefix = "firewall:"
	// CSRSubresource is the subresource a requester must be allowed to
	// create (a SubjectAccessReview) for its CSR to be approved.
	CSRSubresource = "firewallclient"
)

// AgentUserName is the CN of the agent's client certificate, e.g.
// firewall:shoot--p--s:shoot-firewall-abc-0.
func AgentUserName(namespace, name string) string {
	return AgentUserPrefix + namespace + ":" + name
}

// AgentGroup is the certificate's only organization: the shoot namespace.
func AgentGroup(namespace string) string {
	return AgentUserPrefix + namespace
}

// ParseAgentUserName returns the namespace and name in an agent's user name.
func ParseAgentUserName(user string) (namespace, name string, err error) {
	rest, ok := strings.CutPrefix(user, AgentUserPrefix)
	if !ok {
		return "", "", fmt.Errorf("%q is not a firewall agent's name", user)
	}
	parts := strings.Split(rest, ":")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", fmt.Errorf("%q is not of the form %s<namespace>:<name>", user, AgentUserPrefix)
	}
	return parts[0], parts[1], nil
}

// CSRName is the one name under which a firewall's agent requests its client
// certificate: its RBAC names it, so the agent can read (and replace) its own
// CSR and no other. Namespaces and names are DNS labels/subdomains, so the
// result is a valid object name for every Firewall of up to 180 characters.
func CSRName(namespace, name string) string {
	return "firewall." + namespace + "." + name
}

// DeliveredBootstrapKey is the data key of the bootstrap kubeconfig the seed
// delivers through the shoot after a control plane migration.
const DeliveredBootstrapKey = "kubeconfig"

// DeliveredBootstrapSecretName names the shoot Secret (and the Role and
// RoleBinding that let the agent read it) that carries a firewall's
// delivered bootstrap kubeconfig; the extension writes it, the agent reads it.
func DeliveredBootstrapSecretName(firewall string) string {
	return "firewall-agent-bootstrap-" + firewall
}

// DeliveryKeySecretName names the seed Secret, in the Firewall's namespace,
// that holds the private key signing its deliveries and the last delivery.
// The agent cannot read it.
func DeliveryKeySecretName(firewall string) string {
	return "firewall-delivery-" + firewall
}

// Data keys of the delivery key Secret that travel in the migration state:
// the private key (PKCS #8 DER) and the generation of the last delivery, so
// that a new seed with a clock behind the old one's still delivers higher.
const (
	DeliveryKeySecretKey        = "key"
	DeliveryGenerationSecretKey = "generation"
)
