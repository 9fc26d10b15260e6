package credentials

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultSweepTTL is how long a sweep's answer is used: a grant made since
// is seen by the next boot token minted after it.
const DefaultSweepTTL = time.Minute

// Sweep asks the seed what the groups of every boot identity
// (system:serviceaccounts, system:serviceaccounts:<boot namespace>,
// system:authenticated) may do: every write verb on every resource and
// subresource the seed serves (its discovery, CRDs and aggregated APIs
// included), every verb on the subresources that enter pods or reach nodes,
// and reading Secrets, cluster-wide, in the boot namespace and in
// kube-system. What a fixed list does not name (a seed that lets every
// ServiceAccount create Jobs, or write ManagedResources that
// gardener-resource-manager applies) is found too. The groups' answer is the
// same for every firewall, so it is kept for TTL; BootIdentityHarmless asks
// about the firewall's own user.
type Sweep struct {
	Client    client.Client
	Discovery discovery.DiscoveryInterface
	// TTL is how long an answer is used; DefaultSweepTTL when 0.
	TTL time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu   sync.Mutex
	ns   string
	at   time.Time
	held []string
}

// groupsMayDo is what the boot identity's groups may do in every Kubernetes
// cluster (system:basic-user): ask what they themselves may do.
var groupsMayDo = []authorizationv1.ResourceAttributes{
	{Group: authorizationv1.GroupName, Resource: "selfsubjectaccessreviews", Verb: "create"},
	{Group: authorizationv1.GroupName, Resource: "selfsubjectrulesreviews", Verb: "create"},
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews", Verb: "create"},
}

var (
	writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}
	// enteringSubresources run code in pods or reach nodes and pods whatever
	// the verb (exec and attach also over a GET's websocket).
	enteringSubresources = []string{"exec", "attach", "portforward", "proxy", "ephemeralcontainers"}
)

// Held returns what the groups of a boot identity of bootNamespace may do
// beyond asking about themselves, as "verb resource[.group] [in namespace]".
// An API group the seed cannot list (an aggregated API that is down) is
// skipped; the rest is still asked.
func (s *Sweep) Held(ctx context.Context, bootNamespace string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	ttl := s.TTL
	if ttl == 0 {
		ttl = DefaultSweepTTL
	}
	if s.ns == bootNamespace && !s.at.IsZero() && now.Sub(s.at) < ttl {
		return s.held, nil
	}
	attrs, err := s.questions(bootNamespace)
	if err != nil {
		return nil, err
	}
	held, err := review(ctx, s.Client, "", append(BootGroups(bootNamespace), "system:authenticated"), attrs, "the boot identity's groups")
	if err != nil {
		return nil, err
	}
	s.ns, s.at, s.held = bootNamespace, now, held
	return held, nil
}

func (s *Sweep) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// questions are the resource attributes to ask about, from the seed's
// discovery.
func (s *Sweep) questions(bootNamespace string) ([]authorizationv1.ResourceAttributes, error) {
	// Every version, for its subresources: the preferred list has none.
	_, lists, err := s.Discovery.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discovery of the seed's resources: %w", err)
	}
	var out []authorizationv1.ResourceAttributes
	asked := map[authorizationv1.ResourceAttributes]bool{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			resource, sub, _ := strings.Cut(r.Name, "/")
			var verbs []string
			for _, v := range r.Verbs {
				switch {
				case slices.Contains(writeVerbs, v), slices.Contains(enteringSubresources, sub),
					sub == "" && resource == "secrets" && gv.Group == "":
					verbs = append(verbs, v)
				}
			}
			namespaces := []string{""}
			if r.Namespaced {
				namespaces = append(namespaces, bootNamespace, metav1.NamespaceSystem)
			}
			for _, v := range verbs {
				for _, ns := range namespaces {
					a := authorizationv1.ResourceAttributes{Group: gv.Group, Resource: resource, Subresource: sub, Verb: v}
					mayDo := slices.Contains(groupsMayDo, a)
					a.Namespace = ns
					if !asked[a] && !mayDo {
						out = append(out, a)
						asked[a] = true
					}
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("discovery of the seed's resources: nothing to ask about")
	}
	return out, nil
}
