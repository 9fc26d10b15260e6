// Package app holds the gardener-extension-firewall-admission command.
package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/admission/validator"
	aclvalidation "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
)

// Version is set at build time with
// -ldflags -X .../cmd/gardener-extension-firewall-admission/app.Version=v1.2.3.
var Version = "dev"

// Options are the command line flags.
type Options struct {
	Host     string
	Port     int
	CertDir  string
	MaxCIDRs int
	// GardenKubeconfig is the garden's kubeconfig, to read the shoots'
	// CloudProfiles; empty checks the providerConfigs' syntax only.
	GardenKubeconfig string
	// HealthBindAddress serves /healthz and /readyz; "0" or "" turns it off.
	HealthBindAddress string
}

// AddFlags registers the flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Host, "host", "", "address to listen on (all when empty)")
	fs.IntVar(&o.Port, "port", 9443, "port to serve the admission webhook on")
	fs.StringVar(&o.CertDir, "cert-dir", "", "folder with tls.crt and tls.key (required)")
	fs.IntVar(&o.MaxCIDRs, "acl-max-cidrs", aclvalidation.DefaultMaxCIDRs, "largest number of CIDRs in one shoot's acl rule")
	fs.StringVar(&o.GardenKubeconfig, "garden-kubeconfig", "", "kubeconfig of the garden, to check firewalls against the shoots' CloudProfiles (empty: syntax checks only)")
	fs.StringVar(&o.HealthBindAddress, "health-bind-address", ":8081", `address of /healthz (alive) and /readyz (serving TLS), plain HTTP, "0" to disable`)
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if o.CertDir == "" {
		return errors.New("--cert-dir is required: the garden's kube-apiserver only calls webhooks over TLS")
	}
	if _, err := os.Stat(o.CertDir); err != nil {
		return fmt.Errorf("--cert-dir: %w", err)
	}
	if o.GardenKubeconfig != "" {
		if _, err := os.Stat(o.GardenKubeconfig); err != nil {
			return fmt.Errorf("--garden-kubeconfig: %w", err)
		}
	}
	return nil
}

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
		Use:           "gardener-extension-firewall-admission",
		Short:         "Garden admission for Shoots using the firewall and acl extensions",
		Version:       Version,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			return Serve(cmd.Context(), opts)
		},
	}
	cmd.SetVersionTemplate("gardener-extension-firewall-admission {{.Version}}\n")
	opts.AddFlags(cmd.Flags())
	return cmd
}

// Serve serves the Shoot validator at validator.Path, and the health
// endpoints, until ctx ends.
func Serve(ctx context.Context, opts *Options) error {
	ctrl.SetLogger(zap.New())
	server := webhook.NewServer(webhook.Options{Host: opts.Host, Port: opts.Port, CertDir: opts.CertDir})
	v := &validator.Validator{ACLLimits: aclvalidation.Limits{MaxCIDRs: opts.MaxCIDRs}}
	if opts.GardenKubeconfig != "" {
		reader, err := gardenReader(opts.GardenKubeconfig)
		if err != nil {
			return err
		}
		v.Reader = reader
	}
	server.Register(validator.Path, &admission.Webhook{Handler: v})
	if addr := opts.HealthBindAddress; addr != "" && addr != "0" {
		health, err := serveHealth(ctx, addr, server.StartedChecker())
		if err != nil {
			return err
		}
		defer health()
	}
	return server.Start(ctx)
}

// gardenReader reads CloudProfiles and NamespacedCloudProfiles straight from
// the garden: one GET per Shoot write needs only `get`, no list or watch.
func gardenReader(kubeconfig string) (client.Reader, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--garden-kubeconfig: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := gardencorev1beta1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("--garden-kubeconfig: %w", err)
	}
	return c, nil
}

// serveHealth serves /healthz (the process answers) and /readyz (the
// webhook serves TLS) on addr; stop shuts it down.
func serveHealth(ctx context.Context, addr string, started healthz.Checker) (stop func(), err error) {
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--health-bind-address: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/healthz", http.StripPrefix("/healthz", &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}}))
	mux.Handle("/readyz", http.StripPrefix("/readyz", &healthz.Handler{Checks: map[string]healthz.Checker{"webhook": started}}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return func() {
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}, nil
}
