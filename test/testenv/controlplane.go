// Package testenv starts real Kubernetes control planes for integration tests:
// etcd and kube-apiserver through controller-runtime's envtest, plus, for seeds,
// kube-controller-manager with the controllers the firewall credentials rely on.
// The binaries are built from source by hack/build-control-plane.sh.
package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Options describe one control plane.
type Options struct {
	// Name tells control planes apart in CA names and log files, e.g. "seed-a", "shoot".
	Name string
	// CRDDirectoryPaths are installed before Start returns. Use SeedCRDPaths or ShootCRDPaths.
	CRDDirectoryPaths []string
	// ControllerManager starts kube-controller-manager with the controllers in
	// controllermanager.go, so approved CSRs are really signed.
	ControllerManager bool
	// ServiceAccountTokens also runs kube-controller-manager's
	// serviceaccount-token controller, which fills legacy ServiceAccount token
	// Secrets (firewall-controller-manager's way to its firewalls' credentials).
	// It needs ControllerManager.
	ServiceAccountTokens bool
	// SigningDuration is the longest validity kube-controller-manager gives a signed
	// certificate (--cluster-signing-duration); a CSR may ask for less. Default 1h.
	SigningDuration time.Duration
	// Address is the address kube-apiserver listens on, and that its
	// serving certificate names; the loopback when empty. The lab's
	// firewalls reach their control planes at the lab's host address.
	Address string
}

// ControlPlane is one running etcd + kube-apiserver (+ kube-controller-manager).
type ControlPlane struct {
	Name string
	// Config authenticates as an administrator (group system:masters).
	Config *rest.Config
	// Dir holds certificates, the client CA and component logs.
	Dir string

	env *envtest.Environment
	ca  *clientCA
	kcm *Process
	// watchdog kills etcd and kube-apiserver when this process dies first.
	watchdog *watchdog
}

// Start starts a control plane and waits until it serves.
func Start(opts Options) (*ControlPlane, error) {
	if opts.Name == "" {
		return nil, fmt.Errorf("testenv: Options.Name is required")
	}
	assets, err := binaryDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "testenv-"+opts.Name+"-")
	if err != nil {
		return nil, err
	}
	ca, err := newClientCA(opts.Name)
	if err != nil {
		return nil, err
	}

	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     opts.CRDDirectoryPaths,
		ErrorIfCRDPathMissing: true,
	}
	apiServer := env.ControlPlane.GetAPIServer()
	apiServer.CertDir = filepath.Join(dir, "kube-apiserver")
	if err := os.MkdirAll(apiServer.CertDir, 0o700); err != nil {
		return nil, err
	}
	apiServer.Authn = ca
	if opts.Address != "" {
		// envtest takes the address only with a port; it would pick both on
		// the loopback otherwise.
		port, err := freePort(opts.Address)
		if err != nil {
			return nil, err
		}
		apiServer.Address = opts.Address
		apiServer.Port = port
	}
	apiServer.Configure().
		// As on a Gardener seed: the attack tests show what a bootstrap token
		// could do there, and that no firewall credential can do the same.
		Set("enable-bootstrap-token-auth", "true").
		Set("authorization-mode", "RBAC")

	before := children(envtestProcesses...)
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting control plane %q: %w", opts.Name, err)
	}
	cp := &ControlPlane{Name: opts.Name, Config: cfg, Dir: dir, env: env, ca: ca}
	if cp.watchdog, err = watch(before, children(envtestProcesses...)); err != nil {
		_ = cp.Stop()
		return nil, err
	}

	if opts.ControllerManager {
		if err := cp.startControllerManager(assets, opts.SigningDuration, opts.ServiceAccountTokens); err != nil {
			_ = cp.Stop()
			return nil, err
		}
	}
	return cp, nil
}

// freePort returns a port that is free on address now.
func freePort(address string) (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(address, "0"))
	if err != nil {
		return "", fmt.Errorf("finding a free port on %s: %w", address, err)
	}
	defer func() { _ = l.Close() }()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// Stop stops all components and removes the working folder.
func (c *ControlPlane) Stop() error {
	var errs []error
	if c.kcm != nil {
		if err := c.kcm.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.env.Stop(); err != nil {
		errs = append(errs, err)
	}
	c.watchdog.stop()
	if len(errs) == 0 {
		// Keep the logs of a control plane that did not stop cleanly.
		errs = append(errs, os.RemoveAll(c.Dir))
	}
	return errors.Join(errs...)
}

// AddUser returns a config that authenticates with a client certificate for the user.
func (c *ControlPlane) AddUser(name string, groups ...string) (*rest.Config, error) {
	return c.ca.AddUser(envtest.User{Name: name, Groups: groups}, c.anonymousConfig())
}

// CACertificate is the PEM of the CA that kube-apiserver trusts for client
// certificates and that kube-controller-manager signs with.
func (c *ControlPlane) CACertificate() []byte { return c.ca.ca.CertificatePEM }

// AnonymousConfig reaches the kube-apiserver and trusts its serving CA, with no credential.
func (c *ControlPlane) anonymousConfig() *rest.Config {
	return &rest.Config{
		Host:            c.Config.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.Config.CAData},
	}
}

// WithBearerToken returns a config that authenticates with the token only.
func (c *ControlPlane) WithBearerToken(token string) *rest.Config {
	cfg := c.anonymousConfig()
	cfg.BearerToken = token
	return cfg
}

// Kubeconfig renders a config as a kubeconfig file's content.
func Kubeconfig(cfg *rest.Config) ([]byte, error) {
	return clientcmd.Write(clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"cluster": {
			Server:                   cfg.Host,
			CertificateAuthorityData: cfg.CAData,
		}},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{"user": {
			ClientCertificateData: cfg.CertData,
			ClientKeyData:         cfg.KeyData,
			Token:                 cfg.BearerToken,
		}},
		Contexts:       map[string]*clientcmdapi.Context{"context": {Cluster: "cluster", AuthInfo: "user"}},
		CurrentContext: "context",
	})
}

// RepoRoot is the root of this repository, for paths to CRDs and charts.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// SeedCRDPaths are the CRDs a seed has: Gardener's extension and resource-manager
// CRDs, Istio's, and this project's own seed CRDs once they exist.
func SeedCRDPaths() []string {
	return existing(filepath.Join(RepoRoot(), "upstream-crds"), filepath.Join(RepoRoot(), "pkg", "apis", "firewall", "crds", "seed"))
}

// ShootCRDPaths are the CRDs the extension installs into a shoot.
func ShootCRDPaths() []string {
	return existing(filepath.Join(RepoRoot(), "pkg", "apis", "firewall", "crds", "shoot"))
}

// MetalStackShootCRDPaths hold the metal-stack.io/v1 ClusterwideNetworkPolicy
// CRD of metal-stack's firewall-controller, which shoots moved from it hold.
func MetalStackShootCRDPaths() []string {
	return existing(filepath.Join(RepoRoot(), "upstream-crds", "shoot"))
}

// FirewallControllerManagerCRDPaths hold the rest of firewall-controller-manager's
// CRDs (FirewallSet, Firewall; FirewallMonitor, which it reads in a
// single-cluster setup), for a seed that runs its binary.
func FirewallControllerManagerCRDPaths() []string {
	return existing(filepath.Join(RepoRoot(), "upstream-crds", "fcm"), filepath.Join(RepoRoot(), "upstream-crds", "shoot"))
}

// FirewallControllerManagerWebhooks is the folder of its webhook configurations.
func FirewallControllerManagerWebhooks() string {
	return filepath.Join(RepoRoot(), "upstream-crds", "fcm", "webhooks")
}

// MetalStackExamplePolicies is firewall-controller's own example of its policies.
func MetalStackExamplePolicies() string {
	return filepath.Join(RepoRoot(), "upstream-crds", "examples", "metal-stack.io_clusterwidenetworkpolicy.yaml")
}

func existing(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
