package acl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/providerstatus"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/v1alpha1"
)

// sharedRebuilds coalesces the rebuilds of the shared filters. A rebuild lists every acl
// Extension and renders one object for all of a gateway's ACL shoots, so its cost grows with the
// number of shoots; one rebuild per shoot reconciliation would make reconciling n shoots cost
// O(n²). Instead, a reconciliation that finds a rebuild running leaves its namespaces pending and
// returns: each shoot writes its status before, so the running rebuild's next round (which lists
// again) includes it. The running rebuild loops until nothing is pending.
//
// A reconciliation whose shoot contributes to each of its namespaces exactly what the last
// rebuild of that namespace built from it, within sharedHealInterval, rebuilds nothing: the
// periodic resync of thousands of unchanged shoots would otherwise keep a rebuild, and its list
// of every Extension, running without pause, and one shoot's change would wait behind them.
type sharedRebuilds struct {
	mu      sync.Mutex
	running bool
	pending map[string]struct{}
	// built is, per ingress namespace, what the last successful rebuild built from each shoot
	// (contribution fingerprints), and when.
	built map[string]builtNamespace
	// expected is, per shoot namespace, the contribution its last status write made ("" for
	// none: status cleared): a rebuild reads the statuses from the informer cache, and uses
	// them only once the cache shows every expected contribution (see cachedStatuses).
	expected map[string]string
	// now is the clock (tests replace it).
	now func() time.Time
	// catchUp replaces cacheCatchUp (tests shorten it).
	catchUp time.Duration
}

type builtNamespace struct {
	at     time.Time
	shoots map[string]string
	// listeners are the gateway's HTTP-CONNECT ports the rebuild patched (listenerPorts).
	listeners string
}

// sharedHealInterval is how long a namespace's rebuild is trusted: after it, the next
// reconciliation of any of its shoots rebuilds it (and so heals a shard deleted by hand).
const sharedHealInterval = 10 * time.Minute

// extensionListChunk bounds how many Extensions one list call returns: a rebuild lists every acl
// Extension, and the whole list at once would be held in memory twice (body and objects).
const extensionListChunk = 500

// contribution fingerprints what a shoot's status puts into the shared filters: its ingress
// namespaces, their selectors and its policy.
func contribution(namespace string, st *v1alpha1.ExtensionStatus) string {
	// Empty and absent are the same once the status went through JSON.
	var ingress []string
	if len(st.IngressNamespaces) > 0 {
		ingress = st.IngressNamespaces
	}
	var selectors map[string]map[string]string
	if len(st.Selectors) > 0 {
		selectors = st.Selectors
	}
	raw, _ := json.Marshal([]any{ingress, selectors, providerstatus.ShootPolicy(namespace, st)})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// upToDate says whether the last rebuilds of the namespaces built exactly this contribution of
// the shoot, recently enough, and no rebuild is left to do.
func (r *sharedRebuilds) upToDate(shoot, fingerprint string, namespaces []string, listeners map[string]string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(namespaces) == 0 || len(r.pending) > 0 {
		// Pending namespaces (a failed rebuild's) are driven by the next reconciliation of any
		// shoot: this one takes them.
		return false
	}
	for _, ns := range namespaces {
		b, ok := r.built[ns]
		if !ok || b.shoots[shoot] != fingerprint || b.listeners != listeners[ns] || r.clock().Sub(b.at) >= sharedHealInterval {
			return false
		}
	}
	return true
}

func (r *sharedRebuilds) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// expect records the contribution a shoot's status now makes ("" for none).
func (r *sharedRebuilds) expect(shoot, fingerprint string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.expected == nil {
		r.expected = map[string]string{}
	}
	r.expected[shoot] = fingerprint
}

// expectations is a copy of the expected contributions.
func (r *sharedRebuilds) expectations() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.expected)
}

// settle forgets the expectations a rebuild saw in the cache, unless a newer write replaced them.
func (r *sharedRebuilds) settle(seen map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for shoot, fp := range seen {
		if r.expected[shoot] == fp {
			delete(r.expected, shoot)
		}
	}
}

func (r *sharedRebuilds) recordBuilt(namespace string, shoots map[string]string, listeners string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.built == nil {
		r.built = map[string]builtNamespace{}
	}
	r.built[namespace] = builtNamespace{at: r.clock(), shoots: shoots, listeners: listeners}
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
	statuses, err := a.statusesForRebuild(ctx)
	if err != nil {
		return err
	}
	a.decoded.retain(statuses)
	sort.Slice(statuses, func(i, j int) bool { return statuses[i].namespace < statuses[j].namespace })
	for _, ns := range namespaces {
		var shoots []*shootStatus
		var selector map[string]string
		built := map[string]string{}
		for _, s := range statuses {
			if !slices.Contains(s.status.IngressNamespaces, ns) {
				continue
			}
			shoots = append(shoots, s)
			built[s.namespace] = s.contribution
			if selector == nil && s.status.Selectors != nil {
				selector = s.status.Selectors[ns]
			}
		}
		listeners, err := a.gatewayListeners(ctx, ns, selector)
		if err != nil {
			return err
		}
		if err := a.deployShards(ctx, ns, selector, listeners, shoots); err != nil {
			return err
		}
		a.shared.recordBuilt(ns, built, listenerPorts(listeners))
	}
	return nil
}

// cacheCatchUp is how long a rebuild waits for the informer cache to show the statuses written
// before it, before it lists them from the kube-apiserver instead.
const cacheCatchUp = 3 * time.Second

// statusesForRebuild returns the statuses of all acl Extensions not being deleted. It reads the
// informer cache, without copies: a list of every Extension from the kube-apiserver per rebuild
// costs it and this process a full encode and decode of thousands of objects. The cache is used
// once it shows every contribution this process wrote and has not yet seen built; while it
// lags, the rebuild waits up to cacheCatchUp, then lists around it.
func (a *actuator) statusesForRebuild(ctx context.Context) ([]*shootStatus, error) {
	expected := a.shared.expectations()
	wait := cacheCatchUp
	if a.shared.catchUp > 0 {
		wait = a.shared.catchUp
	}
	deadline := time.Now().Add(wait)
	for {
		items, err := a.cachedExtensions(ctx)
		if err != nil {
			return nil, err
		}
		if a.caughtUp(items, expected) {
			a.shared.settle(expected)
			return a.statusesOf(items, nil), nil
		}
		if time.Now().After(deadline) {
			listed, err := a.aclStatuses(ctx)
			if err == nil {
				// Listed after the writes, so it holds them (or newer): nothing is left to wait for.
				a.shared.settle(expected)
			}
			return listed, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// caughtUp says whether the Extensions carry every expected contribution. It decodes the
// statuses of the expected shoots only: while the cache lags it is asked every 50 ms.
func (a *actuator) caughtUp(items []extensionsv1alpha1.Extension, expected map[string]string) bool {
	if len(expected) == 0 {
		return true
	}
	var candidates []extensionsv1alpha1.Extension
	for _, ex := range items {
		if _, ok := expected[ex.Namespace]; ok {
			candidates = append(candidates, ex)
		}
	}
	seen := make(map[string]string, len(expected))
	for _, s := range a.statusesOf(candidates, nil) {
		seen[s.namespace] = s.contribution
	}
	for shoot, fp := range expected {
		if seen[shoot] != fp {
			return false
		}
	}
	return true
}

// cachedExtensions are the Extensions in the informer cache. The objects are the cache's own (no
// deep copy): they are only read.
func (a *actuator) cachedExtensions(ctx context.Context) ([]extensionsv1alpha1.Extension, error) {
	list := &extensionsv1alpha1.ExtensionList{}
	if err := a.cache.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing Extensions from the cache: %w", err)
	}
	return list.Items, nil
}

func (a *actuator) statusesOf(items []extensionsv1alpha1.Extension, out []*shootStatus) []*shootStatus {
	if a.decoded == nil {
		a.decoded = decodedStatuses{}
	}
	for i := range items {
		if s := a.decoded.of(&items[i]); s != nil {
			out = append(out, s)
		}
	}
	return out
}

// aclStatuses lists the statuses of all acl Extensions not being deleted, around the cache, in
// chunks: only the decoded statuses are kept.
func (a *actuator) aclStatuses(ctx context.Context) ([]*shootStatus, error) {
	var out []*shootStatus
	opts := []client.ListOption{client.Limit(extensionListChunk)}
	for {
		page := &extensionsv1alpha1.ExtensionList{}
		if err := a.reader.List(ctx, page, opts...); err != nil {
			return nil, fmt.Errorf("listing Extensions: %w", err)
		}
		out = a.statusesOf(page.Items, out)
		if page.Continue == "" {
			return out, nil
		}
		opts = []client.ListOption{client.Limit(extensionListChunk), client.Continue(page.Continue)}
	}
}
