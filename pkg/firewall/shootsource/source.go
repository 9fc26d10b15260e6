// Package shoot is the agent's shoot source: the shoot kubeconfig the agent
// keeps on disk (refreshed through the seed, so the shoot stays reachable
// when the seed is not), and what the agent reads from and writes to the
// shoot: the owner's ClusterwideNetworkPolicies and their status, the
// FirewallMonitor, and, after a control plane migration, its new bootstrap
// kubeconfig: the shoot's endpoint is the one address that did not change.
package shootsource

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/atomicfile"
)

// AccessSecretKubeconfigKey is the key of the kubeconfig in the shoot access
// secret (Gardener's TokenRequestor fills its token).
const AccessSecretKubeconfigKey = "kubeconfig"

// Source talks to the shoot as the firewall's agent.
type Source struct {
	Config agentconfigv1alpha1.ShootSource
	// Name is the firewall's name.
	Name string
	Log  *slog.Logger

	client client.Client
	// loaded is the kubeconfig the client was built from.
	loaded []byte
	// metalStack are the metal-stack.io/v1 policies last read, by name;
	// metalStackErrs why some did not convert, shadowed those ours override.
	metalStack     map[string]*unstructured.Unstructured
	metalStackErrs map[string]error
	shadowed       map[string]bool
	// monitor is the FirewallMonitor last written, owner of the
	// EndpointSlice of the metrics.
	monitor *fwv1alpha1.FirewallMonitor
}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := discoveryv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := fwv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// Store keeps a shoot kubeconfig read through the seed, when it differs from
// the one on disk.
func (s *Source) Store(kubeconfig []byte) error {
	if len(kubeconfig) == 0 {
		return nil
	}
	current, err := os.ReadFile(s.Config.Kubeconfig)
	if err == nil && bytes.Equal(current, kubeconfig) {
		return nil
	}
	if _, err := clientcmd.Load(kubeconfig); err != nil {
		return fmt.Errorf("the shoot kubeconfig from the seed is invalid: %w", err)
	}
	if err := atomicfile.Write(s.Config.Kubeconfig, kubeconfig, 0o600); err != nil {
		return err
	}
	s.Log.Info("stored a fresh shoot kubeconfig", "path", s.Config.Kubeconfig)
	return nil
}

// DeliveredBootstrapKubeconfig returns the bootstrap kubeconfig the seed left
// for this firewall in the shoot, or nil when there is none.
func (s *Source) DeliveredBootstrapKubeconfig(ctx context.Context) ([]byte, error) {
	c, err := s.connect()
	if err != nil {
		return nil, err
	}
	secret := &corev1.Secret{}
	err = c.Get(ctx, client.ObjectKey{Namespace: s.Config.Namespace, Name: fwv1alpha1.DeliveredBootstrapSecretName(s.Name)}, secret)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the delivered bootstrap kubeconfig from the shoot: %w", err)
	}
	return secret.Data[fwv1alpha1.DeliveredBootstrapKey], nil
}

// connect builds the shoot client from the kubeconfig on disk, again when
// the file changed (the token is renewed well before it expires).
func (s *Source) connect() (client.Client, error) {
	data, err := os.ReadFile(s.Config.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("shoot kubeconfig: %w", err)
	}
	if s.client != nil && bytes.Equal(data, s.loaded) {
		return s.client, nil
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("shoot kubeconfig %s: %w", s.Config.Kubeconfig, err)
	}
	cfg.Timeout = agentconfigv1alpha1.APIRequestTimeout
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	s.client, s.loaded = c, data
	return c, nil
}
