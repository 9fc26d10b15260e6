// Package app holds the gardener-extension-firewall command.
package app

import (
	"context"
	"fmt"
	"os"

	"github.com/gardener/gardener/pkg/client/kubernetes"
	gardenerhealthz "github.com/gardener/gardener/pkg/healthz"
	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	aclcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/acl"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/csrapprover"
	firewallcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/firewall"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/healthcheck"
	firewallmanager "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/firewallmachine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/rollrequest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/metricsendpoints"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/webhook/envoyfilter"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/webhook/providerfirewall"
)

// LeaderElectionID is the name of the leader election Lease; the chart's Role names it.
const LeaderElectionID = "gardener-extension-firewall-leader-election"

// Version is set at build time with -ldflags -X .../app.Version=v1.2.3.
var Version = "dev"

// Main runs the command and returns the exit code.
func Main() int {
	if err := NewCommand().ExecuteContext(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

// NewCommand returns the command.
func NewCommand() *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:           "gardener-extension-firewall",
		Short:         "Gardener extension for metal-stack firewalls and kube-apiserver ACLs",
		Version:       Version,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			return run(cmd.Context(), opts)
		},
	}
	cmd.SetVersionTemplate("gardener-extension-firewall {{.Version}}\n")
	opts.AddFlags(cmd.Flags())
	return cmd
}

// Scheme is the seed scheme plus the firewall API.
func Scheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := kubernetes.AddSeedSchemeToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, firewallv1alpha1.AddToScheme(scheme)
}

func run(ctx context.Context, opts *Options) error {
	// Milliseconds, as Gardener's components log: events a second apart are told apart.
	// Gardener's health checks log every check: here each result once per change.
	ctrl.SetLogger(healthcheck.ChangesOnly(zap.New(func(o *zap.Options) { o.TimeEncoder = zapcore.ISO8601TimeEncoder })))
	cfg, err := restConfig(opts.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = opts.KubeAPIQPS, opts.KubeAPIBurst
	scheme, err := Scheme()
	if err != nil {
		return err
	}
	mgr, err := manager.New(cfg, ManagerOptions(opts, scheme))
	if err != nil {
		return err
	}
	if err := AddToManager(ctx, mgr, opts, MachineProviderOrUnavailable(opts)); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// ManagerOptions are the manager's options for the flags.
func ManagerOptions(opts *Options, scheme *runtime.Scheme) manager.Options {
	return manager.Options{
		Scheme:                  scheme,
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		Metrics:                 metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		HealthProbeBindAddress:  opts.HealthProbeBindAddress,
		PprofBindAddress:        opts.PprofBindAddress,
		WebhookServer:           webhook.NewServer(webhook.Options{Port: opts.WebhookPort, CertDir: opts.WebhookCertDir}),
		// Secrets are read from the kube-apiserver when needed, a few per reconcile. A cache would
		// list and watch every Secret of the seed (all shoots' credentials and ManagedResource
		// data) into this process.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	}
}

// AddToManager adds everything the binary runs to mgr: health checks, the firewall manager with
// the machine provider, the CSR approver, the Extension controllers and their health checks,
// and (with a cert dir) the webhook. Tests use it to run exactly the binary's wiring.
func AddToManager(ctx context.Context, mgr manager.Manager, opts *Options, provider machine.Provider) error {
	caData, err := os.ReadFile(opts.SeedCAFile)
	if err != nil {
		return fmt.Errorf("--seed-ca-file: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("informer-sync", gardenerhealthz.NewCacheSyncHealthz(mgr.GetCache())); err != nil {
		return err
	}
	var shootClient func(context.Context, string) (client.Client, error)
	if opts.RollRequestInterval > 0 {
		shootClient = rollrequest.ShootClients(mgr.GetClient())
	}
	if err := firewallmanager.AddToManager(mgr, firewallmanager.Options{
		Provider:            provider,
		ProgressDeadline:    opts.ProgressDeadline,
		CreateTimeout:       opts.CreateTimeout,
		HealthTimeout:       opts.HealthTimeout,
		DistanceTimeout:     opts.DistanceTimeout,
		MaxReplacements:     opts.MaxReplacements,
		HeartbeatTimeout:    opts.HeartbeatTimeout,
		Workers:             opts.Workers,
		ShootClient:         shootClient,
		RollRequestInterval: opts.RollRequestInterval,
		Bootstrap: &firewallmachine.Bootstrap{
			Server: opts.SeedServer, CAData: caData, TokenValidity: opts.BootTokenValidity, Namespace: opts.BootNamespace,
			SecretNames: []string{constants.ShootAccessSecretName},
			Delivery:    &credentials.ShootDelivery{SeedClient: mgr.GetClient()},
			KubeAPIQPS:  opts.CredentialsKubeAPIQPS, KubeAPIBurst: opts.CredentialsKubeAPIBurst,
		},
	}); err != nil {
		return err
	}
	if err := (&csrapprover.Reconciler{MaxDuration: opts.CSRMaxDuration, BootNamespace: opts.BootNamespace}).AddToManager(mgr); err != nil {
		return err
	}
	if err := (&metricsendpoints.Reconciler{}).AddToManager(mgr); err != nil {
		return err
	}
	if err := firewallcontroller.AddToManagerWithOptions(ctx, mgr, firewallcontroller.AddOptions{
		IgnoreOperationAnnotation: opts.IgnoreOperationAnnotation,
		Controller:                controller.Options{MaxConcurrentReconciles: opts.FirewallMaxConcurrentReconciles},
		Config: firewallcontroller.Config{
			BootNamespace: opts.BootNamespace, ShootAccessTokenValidity: opts.ShootAccessTokenValidity, ReadyTimeout: opts.FirewallReadyTimeout,
			MaxWaiting:      opts.FirewallMaxWaiting,
			DroptailerImage: opts.DroptailerImage, AgentUpdatePublicKey: opts.agentUpdatePublicKey,
			NodeNetworks: firewallcontroller.NodeNetworksOf(provider),
		},
	}); err != nil {
		return err
	}
	if err := aclcontroller.AddToManagerWithOptions(ctx, mgr, ACLAddOptions(opts)); err != nil {
		return err
	}
	if opts.WebhookCertDir != "" {
		if err := envoyfilter.AddToManager(mgr); err != nil {
			return err
		}
		if err := providerfirewall.AddToManager(mgr); err != nil {
			return err
		}
		if opts.WebhookConfigNamespace != "" {
			if err := addWebhookCertificates(ctx, mgr, opts); err != nil {
				return err
			}
		}
	}
	return healthcheck.AddToManager(mgr, opts.HealthCheckSyncPeriod, opts.HealthCheckKubeAPIQPS)
}

// ACLAddOptions are the acl controller's options for the flags.
func ACLAddOptions(opts *Options) aclcontroller.AddOptions {
	return aclcontroller.AddOptions{
		IgnoreOperationAnnotation: opts.IgnoreOperationAnnotation,
		Controller:                controller.Options{MaxConcurrentReconciles: opts.ACLMaxConcurrentReconciles},
		Config:                    opts.ACL,
	}
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return ctrl.GetConfig()
	}
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}
