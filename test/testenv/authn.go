package testenv

import (
	"fmt"
	"os"
	"path/filepath"

	secretsutils "github.com/gardener/gardener/pkg/utils/secrets"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// clientCA authenticates users by client certificates issued from one CA. Unlike
// envtest's built-in authenticator it exposes the CA's key, because the same CA
// must sign the CSRs that kube-controller-manager approves: a certificate that
// kube-controller-manager signs must then authenticate at kube-apiserver.
type clientCA struct {
	ca       *secretsutils.Certificate
	certFile string
	keyFile  string
}

var _ envtest.Authn = &clientCA{}

func newClientCA(name string) (*clientCA, error) {
	ca, err := (&secretsutils.CertificateSecretConfig{
		Name:       name + "-client-ca",
		CommonName: name + "-client-ca",
		CertType:   secretsutils.CACert,
	}).GenerateCertificate()
	if err != nil {
		return nil, fmt.Errorf("generating client CA: %w", err)
	}
	return &clientCA{ca: ca}, nil
}

func (c *clientCA) Configure(workDir string, args *envtest.Arguments) error {
	c.certFile = filepath.Join(workDir, "client-ca.crt")
	c.keyFile = filepath.Join(workDir, "client-ca.key")
	args.Set("client-ca-file", c.certFile)
	return nil
}

func (c *clientCA) Start() error {
	if err := os.WriteFile(c.certFile, c.ca.CertificatePEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(c.keyFile, c.ca.PrivateKeyPEM, 0o600)
}

func (c *clientCA) AddUser(user envtest.User, baseCfg *rest.Config) (*rest.Config, error) {
	cert, err := (&secretsutils.CertificateSecretConfig{
		Name:         user.Name,
		CommonName:   user.Name,
		Organization: user.Groups,
		CertType:     secretsutils.ClientCert,
		SigningCA:    c.ca,
	}).GenerateCertificate()
	if err != nil {
		return nil, fmt.Errorf("issuing client certificate for %q: %w", user.Name, err)
	}
	cfg := rest.CopyConfig(baseCfg)
	cfg.CertData = cert.CertificatePEM
	cfg.KeyData = cert.PrivateKeyPEM
	return cfg, nil
}

func (c *clientCA) Stop() error { return nil }
