package framework

import (
	"crypto/tls"

	secretsutils "github.com/gardener/gardener/pkg/utils/secrets"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	firewallcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/firewall"
)

// NewReceiverTLS makes a drop receiver's CA and serving certificate as the
// extension does (Gardener's secrets utilities), for a shoot without a seed,
// and the certificate for a receiver to serve.
func NewReceiverTLS() (*firewallcontroller.ReceiverTLS, tls.Certificate, error) {
	ca, err := (&secretsutils.CertificateSecretConfig{Name: "ca-firewall-drop", CommonName: "ca-firewall-drop", CertType: secretsutils.CACert}).GenerateCertificate()
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	srv, err := (&secretsutils.CertificateSecretConfig{Name: "firewall-drop-server", CommonName: constants.DropReceiverName,
		DNSNames: []string{constants.DropReceiverServerName}, CertType: secretsutils.ServerCert, SigningCA: ca}).GenerateCertificate()
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	cert, err := tls.X509KeyPair(srv.CertificatePEM, srv.PrivateKeyPEM)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	return &firewallcontroller.ReceiverTLS{CertPEM: srv.CertificatePEM, KeyPEM: srv.PrivateKeyPEM, CABundle: ca.CertificatePEM}, cert, nil
}
