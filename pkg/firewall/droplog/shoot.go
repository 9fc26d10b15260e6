package droplog

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// Names in the shoot.
const (
	// ReceiverName is the receiver's Deployment, Service and
	// ServiceAccount in the shoot's firewall namespace.
	ReceiverName = constants.DropReceiverName
	// ReceiverPortName is the Service port the agent sends to.
	ReceiverPortName = constants.DropReceiverPortName
	// ReceiverPort is the port the receiver listens on.
	ReceiverPort = constants.DropReceiverPort
)

// Shoot reaches the shoot with the agent's kubeconfig, read from the file
// at every use (its token is renewed behind the agent's back): it finds the
// receiver and its CA, and gives the token the receiver checks.
type Shoot struct {
	Kubeconfig string
	// Namespace holds the receiver's Service.
	Namespace string

	mu     sync.Mutex
	client kubernetes.Interface
	loaded []byte
	// url is the receiver found last, until urlUntil.
	url      string
	urlUntil time.Time
}

// endpointTTL is how long a receiver found is used before it is looked up
// again: a new receiver pod is found within it, at one List per interval.
const endpointTTL = 30 * time.Second

// load reads the kubeconfig file as it is now and parses it.
func (s *Shoot) load() ([]byte, *rest.Config, error) {
	data, err := os.ReadFile(s.Kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, nil, fmt.Errorf("shoot kubeconfig %s: %w", s.Kubeconfig, err)
	}
	return data, cfg, nil
}

func (s *Shoot) connect() (kubernetes.Interface, error) {
	data, cfg, err := s.load()
	if err != nil {
		return nil, err
	}
	if s.client != nil && string(data) == string(s.loaded) {
		return s.client, nil
	}
	cfg.Timeout = 10 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	s.client, s.loaded = c, data
	return c, nil
}

// Token returns the bearer token of the agent's shoot kubeconfig: the
// token of its ServiceAccount that Gardener's TokenRequestor renews in the
// seed. The agent mints none (its shoot identity may not), so a stolen shoot
// credential ends with its own expiry.
func (s *Shoot) Token(context.Context) (string, error) {
	_, cfg, err := s.load()
	if err != nil {
		return "", err
	}
	if cfg.BearerToken == "" {
		return "", fmt.Errorf("shoot kubeconfig %s: no bearer token", s.Kubeconfig)
	}
	return cfg.BearerToken, nil
}

// Endpoint returns the URL of a ready endpoint of the receiver's Service.
func (s *Shoot) Endpoint(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.url != "" && time.Now().Before(s.urlUntil) {
		return s.url, nil
	}
	c, err := s.connect()
	if err != nil {
		return "", err
	}
	slices, err := c.DiscoveryV1().EndpointSlices(s.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + ReceiverName,
	})
	if err != nil {
		return "", fmt.Errorf("endpoints of Service %s/%s: %w", s.Namespace, ReceiverName, err)
	}
	for _, sl := range slices.Items {
		port := int32(0)
		for _, p := range sl.Ports {
			if p.Name != nil && *p.Name == ReceiverPortName && p.Port != nil {
				port = *p.Port
			}
		}
		for _, ep := range sl.Endpoints {
			if port != 0 && len(ep.Addresses) > 0 && (ep.Conditions.Ready == nil || *ep.Conditions.Ready) {
				s.url, s.urlUntil = "https://"+net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(port)))+EventsPath, time.Now().Add(endpointTTL)
				return s.url, nil
			}
		}
	}
	return "", fmt.Errorf("service %s/%s has no ready endpoint", s.Namespace, ReceiverName)
}

// CABundle reads the receiver's CA bundle that the extension publishes in
// the receiver's namespace (ConfigMap firewall-drop-ca).
func (s *Shoot) CABundle(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	c, err := s.connect()
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	cm, err := c.CoreV1().ConfigMaps(s.Namespace).Get(ctx, constants.DropReceiverCAConfigMapName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("configmap %s/%s: %w", s.Namespace, constants.DropReceiverCAConfigMapName, err)
	}
	return cm.BinaryData[constants.DropReceiverCAKey], nil
}
