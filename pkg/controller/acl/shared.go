package acl

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/providerstatus"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// sharedRebuilds coalesces the rebuilds of the shared filters. A rebuild lists every acl
// Extension and renders one object for all of a gateway's ACL shoots, so its cost grows with the
// number of shoots; one rebuild per shoot reconciliation would make reconciling n shoots cost
// O(n²). Instead, a reconciliation that finds a rebuild running leaves its namespaces pending and
// returns: each shoot writes its status before, so the running rebuild's next round (which lists
// again) includes it. The running rebuild loops until nothing is pending.
type sharedRebuilds struct {
	mu      sync.Mutex
	running bool
	pending map[string]struct{}
}

// reconcileShared brings the shared filters of the given ingress namespaces up to date with all
// acl Extensions' statuses, now or through the rebuild that is running.
func (a *actuator) reconcileShared(ctx context.Context, namespaces []string) error {
	if len(namespaces) == 0 {
		return nil
	}
	r := &a.shared
	r.mu.Lock()
	if r.pending == nil {
		r.pending = map[string]struct{}{}
	}
	for _, ns := range namespaces {
		r.pending[ns] = struct{}{}
	}
	if r.running {
		r.mu.Unlock()
		return nil
	}
	r.running = true
	r.mu.Unlock()

	for {
		r.mu.Lock()
		if len(r.pending) == 0 {
			r.running = false
			r.mu.Unlock()
			return nil
		}
		batch := make([]string, 0, len(r.pending))
		for ns := range r.pending {
			batch = append(batch, ns)
		}
		r.pending = map[string]struct{}{}
		r.mu.Unlock()

		if err := a.rebuildShared(ctx, batch); err != nil {
			// Keep the batch pending: the next reconciliation (this one's retry included) does it.
			r.mu.Lock()
			for _, ns := range batch {
				r.pending[ns] = struct{}{}
			}
			r.running = false
			r.mu.Unlock()
			return err
		}
	}
}

// rebuildShared rebuilds the shared HTTP-CONNECT EnvoyFilter of each given ingress namespace from
// all acl Extensions' statuses, read around the cache.
func (a *actuator) rebuildShared(ctx context.Context, namespaces []string) error {
	sort.Strings(namespaces)
	namespaces = slices.Compact(namespaces)
	all := &extensionsv1alpha1.ExtensionList{}
	if err := a.reader.List(ctx, all); err != nil {
		return fmt.Errorf("listing Extensions: %w", err)
	}
	for _, ns := range namespaces {
		var shoots []envoy.ShootPolicy
		var selector map[string]string
		for i := range all.Items {
			ex := &all.Items[i]
			if ex.Spec.Type != constants.ACLExtensionType || ex.DeletionTimestamp != nil {
				continue
			}
			st, err := providerstatus.Decode(ex)
			if err != nil || st == nil || !slices.Contains(st.IngressNamespaces, ns) {
				continue
			}
			shoots = append(shoots, providerstatus.ShootPolicy(ex.Namespace, st))
			if selector == nil && st.Selectors != nil {
				selector = st.Selectors[ns]
			}
		}
		sort.Slice(shoots, func(i, j int) bool { return shoots[i].Namespace < shoots[j].Namespace })
		if err := a.deployShards(ctx, ns, selector, shoots); err != nil {
			return err
		}
	}
	return nil
}
