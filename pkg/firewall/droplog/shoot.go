package droplog

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// Names in the shoot.
const (
	// Audience is the audience of the tokens the agent sends and the only
	// one the receiver accepts: the shoot's API rejects such tokens.
	Audience = constants.DropAudience
	// ReceiverName is the receiver's Deployment, Service and
	// ServiceAccount in the shoot's firewall namespace.
	ReceiverName = constants.DropReceiverName
	// ReceiverPortName is the Service port the agent sends to.
	ReceiverPortName = constants.DropReceiverPortName
	// ReceiverPort is the port the receiver listens on.
	ReceiverPort = constants.DropReceiverPort
)

// tokenSeconds is how long a token lives (the API's minimum is 10 minutes).
const tokenSeconds = 600

// Shoot reaches the shoot with the agent's kubeconfig, read from the file
// at every use (its token is renewed behind the agent's back): it mints the
// audience-bound tokens and finds the receiver.
type Shoot struct {
	Kubeconfig string
	// Namespace holds the receiver's Service.
	Namespace string

	mu     sync.Mutex
	token  string
	renew  time.Time
	client kubernetes.Interface
	loaded []byte
	// url is the receiver found last, until urlUntil.
	url      string
	urlUntil time.Time
}

// endpointTTL is how long a receiver found is used before it is looked up
// again: a new receiver pod is found within it, at one List per interval.
const endpointTTL = 30 * time.Second

func (s *Shoot) connect() (kubernetes.Interface, error) {
	data, err := os.ReadFile(s.Kubeconfig)
	if err != nil {
		return nil, err
	}
	if s.client != nil && string(data) == string(s.loaded) {
		return s.client, nil
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("shoot kubeconfig %s: %w", s.Kubeconfig, err)
	}
	cfg.Timeout = 10 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	s.client, s.loaded = c, data
	return c, nil
}

// Token returns a token of the agent's own ServiceAccount for Audience,
// requested anew when half its life is gone.
func (s *Shoot) Token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token != "" && time.Now().Before(s.renew) {
		return s.token, nil
	}
	c, err := s.connect()
	if err != nil {
		return "", err
	}
	// The agent's identity as the shoot knows it: no permission needed.
	review, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("who am I: %w", err)
	}
	ns, name, ok := serviceAccountOf(review.Status.UserInfo.Username)
	if !ok {
		return "", fmt.Errorf("the shoot credential is %q, not a ServiceAccount's", review.Status.UserInfo.Username)
	}
	expiry := int64(tokenSeconds)
	tr, err := c.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{Audience}, ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for %s/%s: %w", ns, name, err)
	}
	s.token = tr.Status.Token
	s.renew = time.Now().Add(time.Until(tr.Status.ExpirationTimestamp.Time) / 2)
	return s.token, nil
}

// serviceAccountOf splits system:serviceaccount:NS:NAME.
func serviceAccountOf(user string) (string, string, bool) {
	rest, ok := strings.CutPrefix(user, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	ns, name, ok := strings.Cut(rest, ":")
	return ns, name, ok && ns != "" && name != ""
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
