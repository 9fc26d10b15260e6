package app

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	aclcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/acl"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/csrapprover"
	firewallcontroller "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/firewall"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/healthcheck"
	firewallmanager "github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/credentials"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/selfupdate"
)

// Options are the command line flags.
type Options struct {
	Kubeconfig   string
	KubeAPIQPS   float32
	KubeAPIBurst int
	// CredentialsKubeAPIQPS and CredentialsKubeAPIBurst limit the requests
	// for firewall credentials (access reviews, tokens, RBAC) on their own.
	CredentialsKubeAPIQPS     float32
	CredentialsKubeAPIBurst   int
	Workers                   int
	LeaderElection            bool
	LeaderElectionNamespace   string
	MetricsBindAddress        string
	HealthProbeBindAddress    string
	PprofBindAddress          string
	IgnoreOperationAnnotation bool

	// SeedServer and SeedCAFile tell agents how to reach this seed.
	SeedServer string
	SeedCAFile string

	MachineProvider  string
	Metal            MetalOptions
	LocalStateDir    string
	LocalAgentPath   string
	LocalInternalNS  string
	LocalExternalNS  string
	ProgressDeadline time.Duration
	CreateTimeout    time.Duration
	HealthTimeout    time.Duration
	DistanceTimeout  time.Duration
	MaxReplacements  int32
	// RollRequestInterval is how often each shoot is asked for its owner's roll request; 0: never.
	RollRequestInterval time.Duration
	HeartbeatTimeout    time.Duration
	// HealthCheckSyncPeriod is how often Gardener's health checks look at each Extension.
	HealthCheckSyncPeriod time.Duration
	// HealthCheckKubeAPIQPS is the health checks' own request budget.
	HealthCheckKubeAPIQPS float32
	CSRMaxDuration        time.Duration
	BootTokenValidity     time.Duration
	// BootNamespace holds the firewalls' boot ServiceAccounts: the extension's namespace.
	BootNamespace string
	// ShootAccessTokenValidity is the life of the agent's shoot token.
	ShootAccessTokenValidity time.Duration
	// DroptailerImage is the image of the shoot's drop receiver.
	DroptailerImage string
	// AgentUpdatePublicKeyFile is the PEM file of the Ed25519 key agent
	// releases are signed with; set, every firewall's agent updates itself.
	AgentUpdatePublicKeyFile string
	// agentUpdatePublicKey is its content, read by Validate.
	agentUpdatePublicKey []byte
	// FirewallReadyTimeout is how long a firewall Extension's reconcile waits for the firewall
	// to forward with its rules; FirewallMaxConcurrentReconciles how many are reconciled at once;
	// FirewallMaxWaiting how many may wait for their firewall at once, on workers of their own.
	FirewallReadyTimeout            time.Duration
	FirewallMaxConcurrentReconciles int
	FirewallMaxWaiting              int

	// ACL is the operator's configuration of the acl extension; ACLMaxConcurrentReconciles how
	// many acl Extensions are reconciled at once.
	ACL                        aclcontroller.Config
	ACLMaxConcurrentReconciles int
	WebhookPort                int
	WebhookCertDir             string
	// WebhookConfigNamespace, when set, makes the binary manage the webhook's certificates
	// and registration itself, the Gardener way (see webhook.go).
	WebhookConfigNamespace   string
	WebhookConfigServicePort int
}

// AddFlags registers the flags; docs/operations/configuration.md documents each of them.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of the seed; in-cluster config when empty")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", constants.KubeAPIQPS, "requests per second to the seed's kube-apiserver (client-side limit; a firewall's first reconcile needs about 25)")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", constants.KubeAPIBurst, "burst of requests to the seed's kube-apiserver")
	fs.Float32Var(&o.CredentialsKubeAPIQPS, "credentials-kube-api-qps", constants.CredentialsKubeAPIQPS, "requests per second for firewall credentials (access reviews, boot tokens, RBAC), apart from --kube-api-qps: each boot token takes 35 access reviews first")
	fs.IntVar(&o.CredentialsKubeAPIBurst, "credentials-kube-api-burst", constants.CredentialsKubeAPIBurst, "burst of requests for firewall credentials")
	fs.IntVar(&o.Workers, "workers", firewallmanager.DefaultWorkers, "objects each firewall controller reconciles at once")
	fs.BoolVar(&o.LeaderElection, "leader-election", true, "elect a leader among replicas")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election lease (default: the pod's namespace)")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", ":8080", `address of the metrics endpoint, "0" to disable`)
	fs.StringVar(&o.HealthProbeBindAddress, "health-bind-address", ":8081", `address of /healthz and /readyz, "0" to disable`)
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", "", `address of Go's /debug/pprof endpoints (heap, goroutines, CPU), empty or "0" for none; for finding what holds memory, never exposed beyond the pod`)
	fs.BoolVar(&o.IgnoreOperationAnnotation, "ignore-operation-annotation", false, "reconcile Extensions on every change, not only when gardenlet sets gardener.cloud/operation")
	fs.StringVar(&o.SeedServer, "seed-server", "", "the seed kube-apiserver URL as firewalls reach it, written into their bootstrap kubeconfigs")
	fs.StringVar(&o.SeedCAFile, "seed-ca-file", "", "PEM file of the CA that serves --seed-server")
	fs.StringVar(&o.MachineProvider, "machine-provider", ProviderMetal, "where firewall machines come from: metal (the metal-api, --metal-api-*) or local (network namespaces on this host: root, ip, unshare, sysctl and --local-agent-path)")
	o.Metal.AddFlags(fs)
	fs.StringVar(&o.LocalStateDir, "local-state-dir", "/var/lib/gardener-extension-firewall/local-machines", "local provider: folder of the machines")
	fs.StringVar(&o.LocalAgentPath, "local-agent-path", "/usr/local/bin/firewall-agent", "local provider: the firewall-agent binary copied into each machine")
	fs.StringVar(&o.LocalInternalNS, "local-internal-netns", "fw-internal", "local provider: network namespace behind the firewalls (the shoot's nodes)")
	fs.StringVar(&o.LocalExternalNS, "local-external-netns", "fw-external", "local provider: network namespace in front of the firewalls (the internet)")
	fs.DurationVar(&o.ProgressDeadline, "progress-deadline", firewallmanager.DefaultProgressDeadline, "how long a new FirewallSet may take to become Ready")
	fs.DurationVar(&o.CreateTimeout, "create-timeout", firewallmanager.DefaultCreateTimeout, "how long a new Firewall whose agent never reported may take to become Ready before it is replaced (a shoot's providerConfig createTimeout overrides it)")
	fs.DurationVar(&o.DistanceTimeout, "distance-timeout", firewallmanager.DefaultDistanceTimeout, "how long a rolling update waits, at each step, for the firewalls to announce the distance it set before it goes on without them (a shoot's providerConfig distanceTimeout overrides it)")
	fs.DurationVar(&o.HealthTimeout, "health-timeout", firewallmanager.DefaultHealthTimeout, "how long a Firewall whose agent has reported may stay not Ready before it is replaced (a shoot's providerConfig healthTimeout overrides it)")
	fs.Int32Var(&o.MaxReplacements, "max-replacements", firewallmanager.DefaultMaxReplacements, "how many Firewalls a FirewallSet creates in place of failed ones before it stops and reports; 0 replaces none")
	fs.DurationVar(&o.RollRequestInterval, "roll-request-interval", firewallmanager.DefaultRollRequestInterval, "how often each shoot's FirewallMonitors are read for the owner's roll request (annotation "+firewallv1alpha1.AnnotationRollSet+"); 0 reads none")
	fs.DurationVar(&o.FirewallReadyTimeout, "firewall-ready-timeout", firewallcontroller.DefaultReadyTimeout, "how long a firewall Extension's reconcile waits for the firewall to forward with its rules before it reports what is missing; keep the registration's reconcileTimeout above it")
	fs.IntVar(&o.FirewallMaxConcurrentReconciles, "firewall-max-concurrent-reconciles", 10, "firewall Extensions reconciled at once, apart from those waiting for their firewall")
	fs.IntVar(&o.FirewallMaxWaiting, "firewall-max-waiting", firewallcontroller.DefaultMaxWaiting, "firewall Extensions that may wait for their firewall to forward at once, each on a worker of its own; a further one fails its reconcile and is reconciled again when a wait ends")
	fs.Float32Var(&o.HealthCheckKubeAPIQPS, "healthcheck-kube-api-qps", healthcheck.DefaultQPS, "requests per second the health checks may send to the seed's kube-apiserver, apart from --kube-api-qps; with more Extensions than the period allows, each is checked less often")
	fs.DurationVar(&o.HealthCheckSyncPeriod, "healthcheck-sync-period", healthcheck.DefaultSyncPeriod, "how often the health checks look at each firewall and acl Extension (each look writes the Extension's status)")
	fs.DurationVar(&o.HeartbeatTimeout, "heartbeat-timeout", firewallmanager.DefaultHeartbeatTimeout, "how old an agent's last report may be for its Firewall to count as connected")
	fs.DurationVar(&o.CSRMaxDuration, "csr-max-duration", csrapprover.DefaultMaxDuration, "longest certificate validity an agent may ask for; at least the 12h the agent asks for")
	fs.DurationVar(&o.BootTokenValidity, "boot-token-validity", time.Hour, "life of a firewall's boot token, its first credential (10m to 1h)")
	fs.DurationVar(&o.ShootAccessTokenValidity, "shoot-access-token-validity", firewallcontroller.DefaultShootAccessTokenValidity, "life of the agent's shoot token, renewed by Gardener's TokenRequestor at 80 %; a control plane migration must reach the agent within what is left of it (10m to 24h)")
	fs.StringVar(&o.DroptailerImage, "droptailer-image", "", "image holding firewall-agent as its entrypoint, run as the drop receiver (firewall-agent droptailer) in each shoot's firewall namespace; empty: no receiver, drops stay in the firewall's kernel log")
	fs.StringVar(&o.AgentUpdatePublicKeyFile, "agent-update-public-key", "", "PEM file of the Ed25519 public key agent releases are signed with (openssl pkey -pubout); set, every firewall's agent gets it and updates itself to the release its Firewall names (agentVersion, agentURL, agentSHA256); empty: agents never update themselves")
	fs.StringVar(&o.BootNamespace, "boot-namespace", "", "namespace of the firewalls' boot ServiceAccounts, the extension's own (required; the chart sets its release namespace)")
	o.ACL.AddFlags(fs)
	fs.IntVar(&o.ACLMaxConcurrentReconciles, "acl-max-concurrent-reconciles", aclcontroller.DefaultAddOptions.Controller.MaxConcurrentReconciles,
		"acl Extensions reconciled at once; each new acl shoot waits for a free one")
	fs.IntVar(&o.WebhookPort, "webhook-port", 9443, "port of the EnvoyFilter webhook")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", "", "folder with tls.crt and tls.key of the webhook server; empty disables the webhook (the acl controller then deploys each shoot's own filter itself)")
	fs.StringVar(&o.WebhookConfigNamespace, "webhook-config-namespace", "", "the extension's namespace: generate and rotate the webhook CA and server certificate in Secrets there, write them to --webhook-cert-dir and register the MutatingWebhookConfiguration for the Service "+WebhookServiceName+" of this namespace; empty: bring tls.crt/tls.key and the registration yourself")
	fs.IntVar(&o.WebhookConfigServicePort, "webhook-config-service-port", 443, "port of the Service "+WebhookServiceName+" that the webhook registration names")
}

// Validate checks the flags before anything starts.
func (o *Options) Validate() error {
	var errs []error
	if o.SeedServer == "" {
		errs = append(errs, errors.New("--seed-server is required: agents need it to bootstrap"))
	}
	if o.SeedCAFile == "" {
		errs = append(errs, errors.New("--seed-ca-file is required"))
	} else if _, err := os.Stat(o.SeedCAFile); err != nil {
		errs = append(errs, fmt.Errorf("--seed-ca-file: %w", err))
	}
	if o.MachineProvider != ProviderMetal && o.MachineProvider != ProviderLocal {
		errs = append(errs, fmt.Errorf("--machine-provider %q is not supported: %s or %s", o.MachineProvider, ProviderMetal, ProviderLocal))
	}
	if o.CSRMaxDuration < agentconfigv1alpha1.CertificateDuration {
		// The agent asks for CertificateDuration; below it every CSR is denied.
		errs = append(errs, fmt.Errorf("--csr-max-duration %s is below the %s the firewall agent asks for: the CSR approver would deny every firewall", o.CSRMaxDuration, agentconfigv1alpha1.CertificateDuration))
	}
	if o.WebhookConfigNamespace != "" && o.WebhookCertDir == "" {
		errs = append(errs, errors.New("--webhook-config-namespace needs --webhook-cert-dir: the managed server certificate is written there"))
	}
	if o.BootTokenValidity < credentials.MinBootTokenValidity || o.BootTokenValidity > credentials.MaxBootTokenValidity {
		errs = append(errs, fmt.Errorf("--boot-token-validity %s must be within [%s, %s]", o.BootTokenValidity, credentials.MinBootTokenValidity, credentials.MaxBootTokenValidity))
	}
	if o.HealthCheckKubeAPIQPS <= 0 {
		errs = append(errs, fmt.Errorf("--healthcheck-kube-api-qps %g must be positive", o.HealthCheckKubeAPIQPS))
	}
	if o.HealthCheckSyncPeriod < 10*time.Second {
		errs = append(errs, fmt.Errorf("--healthcheck-sync-period %s must be at least 10s", o.HealthCheckSyncPeriod))
	}
	if o.CredentialsKubeAPIQPS <= 0 || o.CredentialsKubeAPIBurst <= 0 {
		errs = append(errs, fmt.Errorf("--credentials-kube-api-qps (%v) and --credentials-kube-api-burst (%d) must be positive", o.CredentialsKubeAPIQPS, o.CredentialsKubeAPIBurst))
	}
	if o.KubeAPIQPS <= 0 || o.KubeAPIBurst <= 0 || o.Workers <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps (%v), --kube-api-burst (%d) and --workers (%d) must be positive", o.KubeAPIQPS, o.KubeAPIBurst, o.Workers))
	}
	if o.ShootAccessTokenValidity < 10*time.Minute || o.ShootAccessTokenValidity > 24*time.Hour {
		errs = append(errs, fmt.Errorf("--shoot-access-token-validity %s must be within [10m, 24h]", o.ShootAccessTokenValidity))
	}
	for name, d := range map[string]time.Duration{"--create-timeout": o.CreateTimeout, "--health-timeout": o.HealthTimeout, "--distance-timeout": o.DistanceTimeout, "--firewall-ready-timeout": o.FirewallReadyTimeout} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s %s must be positive", name, d))
		}
	}
	if o.RollRequestInterval < 0 || (o.RollRequestInterval > 0 && o.RollRequestInterval < 10*time.Second) {
		errs = append(errs, fmt.Errorf("--roll-request-interval %s must be 0 (off) or at least 10s: each asks every shoot's kube-apiserver", o.RollRequestInterval))
	}
	if o.MaxReplacements < 0 {
		errs = append(errs, fmt.Errorf("--max-replacements %d must not be negative", o.MaxReplacements))
	}
	if o.FirewallMaxConcurrentReconciles < 1 {
		errs = append(errs, fmt.Errorf("--firewall-max-concurrent-reconciles %d must be at least 1", o.FirewallMaxConcurrentReconciles))
	}
	if o.FirewallMaxWaiting < 1 {
		errs = append(errs, fmt.Errorf("--firewall-max-waiting %d must be at least 1", o.FirewallMaxWaiting))
	}
	if o.ACLMaxConcurrentReconciles < 1 {
		errs = append(errs, fmt.Errorf("--acl-max-concurrent-reconciles %d must be at least 1", o.ACLMaxConcurrentReconciles))
	}
	if o.BootNamespace == "" {
		errs = append(errs, errors.New("--boot-namespace is required: the firewalls' boot ServiceAccounts live there"))
	}
	if o.AgentUpdatePublicKeyFile != "" {
		key, err := readUpdatePublicKey(o.AgentUpdatePublicKeyFile)
		if err != nil {
			errs = append(errs, err)
		}
		o.agentUpdatePublicKey = key
	}
	return errors.Join(errs...)
}

// readUpdatePublicKey reads the operator's release key and checks it with the
// agents' own parser (selfupdate.ParsePublicKey), so that a key the agents
// would refuse stops the extension at start instead.
func readUpdatePublicKey(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--agent-update-public-key: %w", err)
	}
	if len(data) > selfupdate.MaxKeyBytes {
		return nil, fmt.Errorf("--agent-update-public-key %s: %d bytes, more than a public key (at most %d)", path, len(data), selfupdate.MaxKeyBytes)
	}
	key, err := selfupdate.ParsePublicKey(data)
	if err != nil {
		return nil, fmt.Errorf("--agent-update-public-key %s: %w", path, err)
	}
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		return nil, fmt.Errorf("--agent-update-public-key %s: %w", path, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
