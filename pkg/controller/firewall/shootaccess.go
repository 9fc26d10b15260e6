package firewall

import (
	"context"
	"fmt"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	gardenerutils "github.com/gardener/gardener/pkg/utils/gardener"
	"github.com/gardener/gardener/pkg/utils/secrets"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// reconcileShootAccess writes the shoot access Secret from which the agent
// reads its shoot kubeconfig through the seed: the shoot's external endpoint
// and CA, as in the `gardener` Secret (the endpoint a firewall reaches), with
// no credential but the token Gardener's TokenRequestor fills in and renews.
func (a *actuator) reconcileShootAccess(ctx context.Context, namespace string) error {
	gardenerSecret := &corev1.Secret{}
	if err := a.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: v1beta1constants.SecretNameGardener}, gardenerSecret); err != nil {
		return fmt.Errorf("reading the shoot's endpoint from secret %s/%s: %w", namespace, v1beta1constants.SecretNameGardener, err)
	}
	cfg, err := clientcmd.Load(gardenerSecret.Data[secrets.DataKeyKubeconfig])
	if err != nil {
		return fmt.Errorf("secret %s/%s: %w", namespace, v1beta1constants.SecretNameGardener, err)
	}
	kubeContext, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok || cfg.Clusters[kubeContext.Cluster] == nil {
		return fmt.Errorf("secret %s/%s: its kubeconfig names no cluster in its current context %q", namespace, v1beta1constants.SecretNameGardener, cfg.CurrentContext)
	}
	cluster := cfg.Clusters[kubeContext.Cluster]
	kubeconfig := &clientcmdv1.Config{
		CurrentContext: namespace,
		Clusters:       []clientcmdv1.NamedCluster{{Name: namespace, Cluster: clientcmdv1.Cluster{Server: cluster.Server, CertificateAuthorityData: cluster.CertificateAuthorityData}}},
		AuthInfos:      []clientcmdv1.NamedAuthInfo{{Name: constants.ShootAccessName}},
		Contexts:       []clientcmdv1.NamedContext{{Name: namespace, Context: clientcmdv1.Context{Cluster: namespace, AuthInfo: constants.ShootAccessName}}},
	}
	if err := gardenerutils.NewShootAccessSecret(constants.ShootAccessName, namespace).WithKubeconfig(kubeconfig).
		WithTokenExpirationDuration(a.config.ShootAccessTokenValidity.String()).Reconcile(ctx, a.client); err != nil {
		return fmt.Errorf("shoot access secret: %w", err)
	}
	return nil
}
