// Package seedsource is the agent's seed source: it holds the agent's seed
// credential (boot token -> CSR -> client certificate for the agent's one
// identity key, renewed before it expires, bootstrapped again when the seed
// rejects it or moved), reads the
// firewall's own Firewall object and writes the agent's heartbeat into its
// status.
package seedsource

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/bootstrap"
)

// DefaultCertificateDuration is the validity the agent asks for; the
// approver refuses more than its --csr-max-duration, which the extension
// therefore refuses to start below this (the contract's CertificateDuration).
const DefaultCertificateDuration = agentconfigv1alpha1.CertificateDuration

// Source talks to the seed as the firewall.
type Source struct {
	Config  agentconfigv1alpha1.SeedSource
	Name    string
	Version string
	Log     *slog.Logger
	// CertificateDuration is the validity asked for; DefaultCertificateDuration when 0.
	CertificateDuration time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	client  client.Client
	cert    *x509.Certificate
	server  string
	renewAt time.Time
	// key is the agent's identity key, loaded (or made) on first use.
	key *ecdsa.PrivateKey
}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := fwv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Firewall returns the firewall's own Firewall object. It connects (and
// bootstraps) as needed, renews the certificate when due, and bootstraps again
// when the seed rejects the credential.
func (s *Source) Firewall(ctx context.Context) (*fwv1alpha1.Firewall, error) {
	if err := s.ensure(ctx); err != nil {
		return nil, err
	}
	fw, err := s.get(ctx)
	if isCredentialError(err) {
		s.Log.Info("the seed rejects the credential; bootstrapping again", "reason", err.Error())
		if err := s.bootstrap(ctx); err != nil {
			return nil, err
		}
		fw, err = s.get(ctx)
	}
	if err == nil {
		s.pinDeliveryKey(fw)
	}
	return fw, err
}

func (s *Source) get(ctx context.Context) (*fwv1alpha1.Firewall, error) {
	fw := &fwv1alpha1.Firewall{}
	return fw, s.client.Get(ctx, client.ObjectKey{Namespace: s.Config.Namespace, Name: s.Name}, fw)
}

// Secret reads a Secret of the shoot namespace that the seed lets this
// firewall read (its RBAC names each one).
func (s *Source) Secret(ctx context.Context, name string) (*corev1.Secret, error) {
	if s.client == nil {
		return nil, errors.New("not connected to the seed")
	}
	secret := &corev1.Secret{}
	return secret, s.client.Get(ctx, client.ObjectKey{Namespace: s.Config.Namespace, Name: name}, secret)
}

// identityKey is the agent's identity key: loaded from its file, or made
// and written there on first use.
func (s *Source) identityKey() (*ecdsa.PrivateKey, error) {
	if s.key != nil {
		return s.key, nil
	}
	key, err := bootstrap.LoadOrCreateKey(agentconfigv1alpha1.IdentityKeyOf(&s.Config))
	if err != nil {
		return nil, err
	}
	s.key = key
	return key, nil
}

// Heartbeat is what the agent reports into the Firewall's status.
type Heartbeat struct {
	// Message is the last apply's error, "" when it succeeded.
	Message string
	// LastShootRun is when the agent last applied what it read from the
	// shoot, nil when it reads nothing there.
	LastShootRun *metav1.Time
	// AppliedGeneration is the generation of the Firewall whose spec is in
	// force, which the extension waits for.
	AppliedGeneration int64
	// SelfUpdate is the self-update's state, nil without self-update.
	SelfUpdate *fwv1alpha1.SelfUpdateStatus
	// DistanceSupported tells that the agent announces a distance, and
	// Distance is the one in force (nil before the first).
	DistanceSupported bool
	Distance          *int32
	// MetricsAddress is where the agent serves metrics to the shoot, ""
	// when it serves none; the extension publishes it there.
	MetricsAddress string
}

// Heartbeat writes the agent's status: version, the time of this run and hb.
func (s *Source) Heartbeat(ctx context.Context, fw *fwv1alpha1.Firewall, hb Heartbeat) error {
	if s.client == nil {
		return errors.New("not connected to the seed")
	}
	patch := client.MergeFrom(fw.DeepCopy())
	fw.Status.AgentStatus = &fwv1alpha1.AgentStatus{Version: s.Version, LastRunAgainstSeed: &metav1.Time{Time: s.now()}, LastRunAgainstShoot: hb.LastShootRun,
		Message: hb.Message, AppliedGeneration: hb.AppliedGeneration, SelfUpdate: hb.SelfUpdate,
		DistanceSupported: hb.DistanceSupported, Distance: hb.Distance, MetricsAddress: hb.MetricsAddress}
	return s.client.Status().Patch(ctx, fw, patch)
}

// ensure has a client: from the seed kubeconfig when it is there and still
// points where the bootstrap kubeconfig points, else by bootstrapping; and it
// renews the certificate when due.
func (s *Source) ensure(ctx context.Context) error {
	if s.client == nil {
		if err := s.load(); err != nil {
			s.Log.Info("no usable seed kubeconfig; bootstrapping", "reason", err.Error())
			return s.bootstrap(ctx)
		}
	}
	if moved, err := s.seedMoved(); err == nil && moved {
		s.Log.Info("the bootstrap kubeconfig points to another seed; bootstrapping there")
		return s.bootstrap(ctx)
	}
	if !s.renewAt.IsZero() && s.now().After(s.renewAt) {
		if err := s.renew(ctx); err != nil {
			s.Log.Error("renewing the certificate failed; bootstrapping", "error", err)
			return s.bootstrap(ctx)
		}
	}
	return nil
}

// load reads the seed kubeconfig written by an earlier bootstrap.
func (s *Source) load() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Config.Kubeconfig)
	if err != nil {
		return err
	}
	certs, err := certutil.ParseCertsPEM(cfg.CertData)
	if err != nil || len(certs) == 0 {
		return fmt.Errorf("%s holds no client certificate", s.Config.Kubeconfig)
	}
	if !s.now().Before(certs[0].NotAfter) {
		return fmt.Errorf("the certificate in %s expired at %s", s.Config.Kubeconfig, certs[0].NotAfter)
	}
	return s.use(cfg, certs[0])
}

func (s *Source) use(cfg *rest.Config, cert *x509.Certificate) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = agentconfigv1alpha1.APIRequestTimeout
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	s.client, s.cert, s.server = c, cert, cfg.Host
	s.renewAt = bootstrap.RenewAt(cert)
	return nil
}

// seedMoved tells whether the (possibly replaced) bootstrap kubeconfig names
// another server than the one the agent is connected to: after a migration
// the new seed delivers a new bootstrap kubeconfig.
func (s *Source) seedMoved() (bool, error) {
	boot, err := clientcmd.BuildConfigFromFlags("", s.Config.BootstrapKubeconfig)
	if err != nil {
		return false, err
	}
	return s.server != "" && boot.Host != s.server, nil
}

// bootstrap gets a new certificate with the newest bootstrap kubeconfig.
func (s *Source) bootstrap(ctx context.Context) error {
	s.client = nil
	boot, err := clientcmd.BuildConfigFromFlags("", s.Config.BootstrapKubeconfig)
	if err != nil {
		return fmt.Errorf("bootstrap kubeconfig: %w", err)
	}
	return s.request(ctx, boot)
}

// Refused tells whether the seed refuses the agent (401, 403, another CA),
// as opposed to not answering: an answer the agent looks for a delivered
// bootstrap kubeconfig on at once.
func Refused(err error) bool {
	return isCredentialError(err) || apierrors.IsForbidden(err)
}

// renew asks for a new certificate with the current one.
func (s *Source) renew(ctx context.Context) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Config.Kubeconfig)
	if err != nil {
		return err
	}
	s.Log.Info("renewing the seed certificate", "notAfter", s.cert.NotAfter)
	return s.request(ctx, cfg)
}

func (s *Source) request(ctx context.Context, cfg *rest.Config) error {
	duration := s.CertificateDuration
	if duration == 0 {
		duration = DefaultCertificateDuration
	}
	reqCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	key, err := s.identityKey()
	if err != nil {
		return err
	}
	cred, err := bootstrap.RequestCertificate(reqCtx, cfg, s.Config.Namespace, s.Name, key, duration)
	if err != nil {
		return err
	}
	caData := cfg.CAData
	if len(caData) == 0 && cfg.CAFile != "" {
		if caData, err = os.ReadFile(cfg.CAFile); err != nil {
			return err
		}
	}
	if err := bootstrap.WriteKubeconfig(s.Config.Kubeconfig, cfg.Host, caData, cred); err != nil {
		return err
	}
	s.Log.Info("got a seed certificate", "server", cfg.Host, "notAfter", cred.Certificate.NotAfter)
	seedCfg := rest.AnonymousClientConfig(cfg)
	seedCfg.CertData, seedCfg.KeyData = cred.CertificatePEM, cred.KeyPEM
	return s.use(seedCfg, cred.Certificate)
}

// isCredentialError tells whether the seed no longer accepts the credential
// (revoked, another seed behind the same name, a changed CA).
func isCredentialError(err error) bool {
	if err == nil {
		return false
	}
	var unknownAuthority x509.UnknownAuthorityError
	return apierrors.IsUnauthorized(err) || errors.As(err, &unknownAuthority)
}
