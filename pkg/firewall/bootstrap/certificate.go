// Package bootstrap gets the firewall agent its seed credential the way a
// kubelet does: a key generated on the machine, a CSR signed in with the
// bootstrap token (or the current certificate, for renewals), and a
// kubeconfig written with mode 0600.
package bootstrap

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate/csr"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/atomicfile"
)

// Credential is a signed client certificate and its key, both PEM.
type Credential struct {
	CertificatePEM []byte
	KeyPEM         []byte
	Certificate    *x509.Certificate
}

// RequestCertificate asks the seed for a client certificate of the firewall
// namespace/name for key, valid for duration, authenticating with cfg. The
// CSR has the one name the firewall's RBAC lets it read
// (firewallv1alpha1.CSRName), replacing one left from an earlier attempt. It
// waits until the
// certificate is issued or the CSR is denied (the error then carries the
// approver's reason).
func RequestCertificate(ctx context.Context, cfg *rest.Config, namespace, name string, key *ecdsa.PrivateKey, duration time.Duration) (*Credential, error) {
	csrPEM, err := certutil.MakeCSR(key, &pkix.Name{
		CommonName:   firewallv1alpha1.AgentUserName(namespace, name),
		Organization: []string{firewallv1alpha1.AgentGroup(namespace)},
	}, nil, nil)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	req := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: firewallv1alpha1.CSRName(namespace, name)},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           csrPEM,
			SignerName:        certificatesv1.KubeAPIServerClientSignerName,
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			ExpirationSeconds: csr.DurationToExpirationSeconds(duration),
		},
	}
	created, err := create(ctx, cs, req)
	if err != nil {
		return nil, fmt.Errorf("creating CSR %s: %w", req.Name, err)
	}
	certPEM, err := csr.WaitForCertificate(ctx, cs, created.Name, created.UID)
	if err != nil {
		return nil, fmt.Errorf("CSR %s: %w", created.Name, err)
	}
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil || len(certs) == 0 {
		return nil, fmt.Errorf("CSR %s: parsing the issued certificate: %w", created.Name, err)
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return nil, err
	}
	return &Credential{CertificatePEM: certPEM, KeyPEM: keyPEM, Certificate: certs[0]}, nil
}

// create creates the CSR; one left by an earlier attempt (issued, denied or
// pending) is deleted first: the firewall may read only this one name.
func create(ctx context.Context, cs kubernetes.Interface, req *certificatesv1.CertificateSigningRequest) (*certificatesv1.CertificateSigningRequest, error) {
	api := cs.CertificatesV1().CertificateSigningRequests()
	created, err := api.Create(ctx, req, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return created, err
	}
	if err := api.Delete(ctx, req.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("replacing the earlier CSR: %w", err)
	}
	return api.Create(ctx, req, metav1.CreateOptions{})
}

// RenewAt is a random moment between 70% and 90% of the certificate's
// validity, so that many firewalls do not renew at once and a renewal that
// fails has time to be retried.
func RenewAt(cert *x509.Certificate) time.Time {
	validity := cert.NotAfter.Sub(cert.NotBefore)
	jitter, err := rand.Int(rand.Reader, big.NewInt(int64(validity/5)+1))
	if err != nil {
		jitter = big.NewInt(0)
	}
	return cert.NotBefore.Add(validity*7/10 + time.Duration(jitter.Int64()))
}

// WriteKubeconfig writes a kubeconfig with the credential for server (whose
// CA is caPEM) to path with mode 0600, atomically: a reader never sees half
// a file, and the key is never world-readable, not even for a moment.
func WriteKubeconfig(path, server string, caPEM []byte, cred *Credential) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["seed"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["firewall"] = &clientcmdapi.AuthInfo{ClientCertificateData: cred.CertificatePEM, ClientKeyData: cred.KeyPEM}
	cfg.Contexts["firewall"] = &clientcmdapi.Context{Cluster: "seed", AuthInfo: "firewall"}
	cfg.CurrentContext = "firewall"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600)
}
