package app

import (
	"context"
	"fmt"
	"time"

	extensionswebhook "github.com/gardener/gardener/extensions/pkg/webhook"
	"github.com/gardener/gardener/extensions/pkg/webhook/certificates"
	"github.com/gardener/gardener/pkg/utils/retry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/webhook/envoyfilter"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/webhook/providerfirewall"
)

// WebhookComponentName names the webhook's certificates the Gardener way; its prefixed form,
// WebhookServiceName, is the Service in front of the webhook server that the chart creates.
const WebhookComponentName = "firewall"

// WebhookServiceName is the name of the Service the webhook registration points at.
var WebhookServiceName = extensionswebhook.PrefixedName(WebhookComponentName, false)

// WebhookConfiguration is the registration of the seed webhooks behind the Service
// WebhookServiceName in namespace, without a CA bundle (the certificate reconciler adds it):
// the EnvoyFilter webhook, whose name the configuration keeps, and the FirewallDeployment
// webhook that holds provider-metal's firewall.
func WebhookConfiguration(namespace string, servicePort int) *admissionregistrationv1.MutatingWebhookConfiguration {
	clientConfig := func(path string) admissionregistrationv1.WebhookClientConfig {
		return extensionswebhook.BuildClientConfigFor(path, namespace, WebhookComponentName, false, servicePort, extensionswebhook.ModeService, "", nil)
	}
	cfg := envoyfilter.MutatingWebhookConfiguration(clientConfig(envoyfilter.Path))
	cfg.Webhooks = append(cfg.Webhooks, providerfirewall.Webhook(clientConfig(providerfirewall.Path)))
	return cfg
}

// addWebhookCertificates does what Gardener's extensions do for their seed webhooks: a CA and
// a server certificate generated and rotated by Gardener's secrets manager in Secrets of the
// extension's namespace, the server certificate written to the webhook server's cert dir in
// every replica, and the MutatingWebhookConfiguration registered with the current CA bundle
// (owned by the namespace, so that it goes when the extension is uninstalled).
func addWebhookCertificates(ctx context.Context, mgr manager.Manager, opts *Options) error {
	cfg := WebhookConfiguration(opts.WebhookConfigNamespace, opts.WebhookConfigServicePort)
	// Registered once by the leader with the owner reference; the certificate reconciler keeps
	// its CA bundle current from then on.
	if err := mgr.Add(leaderRunnable(func(ctx context.Context) error {
		timeoutCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return retry.Until(timeoutCtx, time.Second, func(ctx context.Context) (bool, error) {
			if err := extensionswebhook.ReconcileSeedWebhookConfig(ctx, mgr.GetClient(), cfg.DeepCopy(), opts.WebhookConfigNamespace, nil); err != nil {
				return retry.MinorError(fmt.Errorf("registering webhook %s: %w", cfg.Name, err))
			}
			return retry.Ok()
		})
	})); err != nil {
		return err
	}
	return certificates.AddCertificateManagementToManager(ctx, mgr, nil, clock.RealClock{},
		extensionswebhook.Configs{MutatingWebhookConfig: cfg}, nil, nil, nil, "",
		WebhookComponentName, false, opts.WebhookConfigNamespace, extensionswebhook.ModeService, "")
}

// leaderRunnable runs once in the elected leader.
type leaderRunnable func(ctx context.Context) error

func (r leaderRunnable) Start(ctx context.Context) error { return r(ctx) }
func (r leaderRunnable) NeedLeaderElection() bool        { return true }
