package csrapprover

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
)

// Bounds of the certificate validity a firewall may ask for.
const (
	// MinDuration is the shortest validity kube-apiserver accepts.
	MinDuration = 10 * time.Minute
	// DefaultMaxDuration keeps a stolen certificate useless after a day.
	DefaultMaxDuration = 24 * time.Hour
)

// MaxRequestBytes bounds a firewall's encoded request: an RSA-4096 request
// is under 2 KiB, and the chart's ValidatingAdmissionPolicy refuses larger
// ones before they reach etcd (keep the two equal).
const MaxRequestBytes = 4096

// firewallRequest is a CSR that claims a firewall identity.
type firewallRequest struct {
	namespace, name string
	request         *x509.CertificateRequest
}

// parse returns the firewall a CSR claims to be, or nil when its CN names no
// firewall (such CSRs are left to other approvers).
func parse(csr *certificatesv1.CertificateSigningRequest) (*firewallRequest, error) {
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("spec.request: not a PEM encoded CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("spec.request: %w", err)
	}
	if !strings.HasPrefix(req.Subject.CommonName, firewallv1alpha1.AgentUserPrefix) {
		return nil, nil
	}
	ns, name, err := firewallv1alpha1.ParseAgentUserName(req.Subject.CommonName)
	if err != nil {
		return nil, fmt.Errorf("subject CN: %w", err)
	}
	return &firewallRequest{namespace: ns, name: name, request: req}, nil
}

// check returns why the CSR must not be approved, "" when it may be. It does
// everything but the API lookups (the Firewall and the SubjectAccessReview).
func check(csr *certificatesv1.CertificateSigningRequest, fr *firewallRequest, bootNamespace string, maxDuration time.Duration) string {
	req := fr.request
	if n := len(csr.Spec.Request); n > MaxRequestBytes {
		return fmt.Sprintf("spec.request of %d bytes is larger than %d", n, MaxRequestBytes)
	}
	if err := req.CheckSignature(); err != nil {
		return "the request's signature does not verify: " + err.Error()
	}
	if got, want := req.Subject.Organization, []string{firewallv1alpha1.AgentGroup(fr.namespace)}; !slices.Equal(got, want) {
		return fmt.Sprintf("subject O must be %q, got %q", want, got)
	}
	if len(req.DNSNames)+len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0 {
		return "a client certificate carries no subject alternative names"
	}

	user := csr.Spec.Username
	switch user {
	case firewallv1alpha1.AgentUserName(fr.namespace, fr.name):
		// Renewal with the firewall's current certificate.
	case credentials.BootUser(bootNamespace, fr.namespace, fr.name):
		// First certificate with the firewall's own boot token.
	default:
		return fmt.Sprintf("requester %q is neither %s nor %s",
			user, firewallv1alpha1.AgentUserName(fr.namespace, fr.name), credentials.BootUser(bootNamespace, fr.namespace, fr.name))
	}

	if !slices.Contains(csr.Spec.Usages, certificatesv1.UsageClientAuth) {
		return "usages must include client auth"
	}
	for _, u := range csr.Spec.Usages {
		switch u {
		case certificatesv1.UsageClientAuth, certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		default:
			return fmt.Sprintf("usage %q is not allowed, only client auth, digital signature and key encipherment", u)
		}
	}

	if reason := checkKey(req.PublicKey); reason != "" {
		return reason
	}

	if csr.Spec.ExpirationSeconds == nil {
		return "spec.expirationSeconds is required: a firewall asks for a short-lived certificate"
	}
	if d := time.Duration(*csr.Spec.ExpirationSeconds) * time.Second; d < MinDuration || d > maxDuration {
		return fmt.Sprintf("spec.expirationSeconds %d is outside [%d, %d]", *csr.Spec.ExpirationSeconds, int(MinDuration.Seconds()), int(maxDuration.Seconds()))
	}
	// One CSR per firewall at a time: a request under any other name is one
	// too many (the admission policy refuses it where it is deployed).
	if want := firewallv1alpha1.CSRName(fr.namespace, fr.name); csr.Name != want {
		return fmt.Sprintf("metadata.name %q is not the firewall's one CSR name %q", csr.Name, want)
	}
	return ""
}

func checkKey(key any) string {
	switch k := key.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return fmt.Sprintf("RSA key of %d bits is too weak, at least 2048", k.N.BitLen())
		}
	case *ecdsa.PublicKey:
		if k.Curve.Params().BitSize < 256 {
			return fmt.Sprintf("ECDSA key of %d bits is too weak, at least P-256", k.Curve.Params().BitSize)
		}
	case ed25519.PublicKey:
	default:
		return fmt.Sprintf("key type %T is not allowed", key)
	}
	return ""
}
