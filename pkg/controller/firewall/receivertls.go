package firewall

import (
	"context"
	"fmt"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	extensionssecretsmanager "github.com/gardener/gardener/extensions/pkg/util/secret/manager"
	secretsutils "github.com/gardener/gardener/pkg/utils/secrets"
	secretsmanager "github.com/gardener/gardener/pkg/utils/secrets/manager"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// The drop receiver's CA and serving certificate, as Gardener's secrets
// manager names them in the seed's shoot namespace.
const (
	receiverCAName     = "ca-firewall-drop"
	receiverServerName = "firewall-drop-server"
)

// ReceiverTLS is the drop receiver's serving certificate and the CA bundle
// the agents verify it with.
type ReceiverTLS struct {
	CertPEM, KeyPEM, CABundle []byte
}

func receiverCAConfig() extensionssecretsmanager.SecretConfigWithOptions {
	return extensionssecretsmanager.SecretConfigWithOptions{
		Config:  &secretsutils.CertificateSecretConfig{Name: receiverCAName, CommonName: receiverCAName, CertType: secretsutils.CACert},
		Options: []secretsmanager.GenerateOption{secretsmanager.Rotate(secretsmanager.KeepOld)},
	}
}

// receiverTLS generates (or keeps) the receiver's CA and certificate with
// Gardener's secrets manager, the CA rotated with the shoot's CAs: during a
// rotation the bundle holds the old CA and the new, so agents verify either.
func (a *actuator) receiverTLS(ctx context.Context, log logr.Logger, namespace string) (*ReceiverTLS, error) {
	cluster, err := extensionscontroller.GetCluster(ctx, a.client, namespace)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", namespace, err)
	}
	caConfig := receiverCAConfig()
	sm, err := extensionssecretsmanager.SecretsManagerForCluster(ctx, log.WithName("secretsmanager"), a.clock, a.direct, cluster,
		constants.SecretsManagerIdentity, []extensionssecretsmanager.SecretConfigWithOptions{caConfig})
	if err != nil {
		return nil, err
	}
	if _, err := sm.Generate(ctx, caConfig.Config, caConfig.Options...); err != nil {
		return nil, fmt.Errorf("the drop receiver's CA: %w", err)
	}
	server, err := sm.Generate(ctx, &secretsutils.CertificateSecretConfig{
		Name: receiverServerName, CommonName: constants.DropReceiverName, DNSNames: []string{constants.DropReceiverServerName},
		CertType: secretsutils.ServerCert, SkipPublishingCACertificate: true,
	}, secretsmanager.SignedByCA(receiverCAName, secretsmanager.UseCurrentCA), secretsmanager.Rotate(secretsmanager.InPlace))
	if err != nil {
		return nil, fmt.Errorf("the drop receiver's certificate: %w", err)
	}
	bundle, ok := sm.Get(receiverCAName, secretsmanager.Bundle)
	if !ok {
		return nil, fmt.Errorf("the drop receiver's CA bundle %s not found", receiverCAName)
	}
	if err := sm.Cleanup(ctx); err != nil {
		return nil, err
	}
	return &ReceiverTLS{CertPEM: server.Data[secretsutils.DataKeyCertificate], KeyPEM: server.Data[secretsutils.DataKeyPrivateKey],
		CABundle: bundle.Data[secretsutils.DataKeyCertificateBundle]}, nil
}

// deleteReceiverTLS removes every secret of the extension's secrets manager
// in the namespace.
func (a *actuator) deleteReceiverTLS(ctx context.Context, log logr.Logger, namespace string) error {
	cluster, err := extensionscontroller.GetCluster(ctx, a.client, namespace)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster %s: %w", namespace, err)
	}
	sm, err := extensionssecretsmanager.SecretsManagerForCluster(ctx, log.WithName("secretsmanager"), a.clock, a.direct, cluster,
		constants.SecretsManagerIdentity, nil)
	if err != nil {
		return err
	}
	return sm.Cleanup(ctx)
}
