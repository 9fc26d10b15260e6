package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/droplog"
)

// newDroptailerCommand is the receiver that runs in the shoot: it takes the
// agents' batches of logged packets and prints one JSON line per event.
func newDroptailerCommand() *cobra.Command {
	var (
		listen, kubeconfig, certDir string
		allowed                     []string
	)
	cmd := &cobra.Command{
		Use:   "droptailer",
		Short: "Receive the firewall's logged packets in the shoot and print them as JSON lines",
		Long: `droptailer runs in the shoot (namespace firewall). It takes batches of logged
packets from the firewall agents over HTTPS, checks each agent's token with a
TokenReview (the shoot API's own audiences, user among --allowed-user)
and prints one JSON line per event to stdout.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDroptailer(cmd.Context(), listen, kubeconfig, certDir, allowed)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", fmt.Sprintf(":%d", droplog.ReceiverPort), "address to take batches on (HTTPS)")
	cmd.Flags().StringVar(&certDir, "cert-dir", "", "folder with tls.crt and tls.key, read again when they change: the certificate the agents verify (the extension's CA, for "+droplog.ServerName+"); empty: a self-signed one, which agents refuse")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the shoot for the TokenReviews; the pod's ServiceAccount when empty")
	cmd.Flags().StringSliceVar(&allowed, "allowed-user", []string{"system:serviceaccount:kube-system:" + constants.AgentServiceAccountName},
		"user name whose batches are taken (the agent's ServiceAccount); repeatable")
	return cmd
}

func runDroptailer(ctx context.Context, listen, kubeconfig, certDir string, allowed []string) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", listen)
	if err != nil {
		return err
	}
	var getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	if certDir != "" {
		getCert = droplog.CertificateFiles(certDir)
		if _, err := getCert(nil); err != nil {
			return fmt.Errorf("--cert-dir: %w", err)
		}
	}
	log.Info("taking logged packets", "address", l.Addr().String(), "allowedUsers", allowed, "certDir", certDir)
	return droplog.Serve(ctx, l, &droplog.Receiver{Client: client, AllowedUsers: allowed, Out: os.Stdout, Log: log}, getCert)
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}
