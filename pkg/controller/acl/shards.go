package acl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// maxEnvoyFilterBytes keeps each shared EnvoyFilter (and so its ManagedResource Secret) below
// 1 MiB. Shards are cut well below it (envoy.ShardBudgetBytes); this is the guard that says so
// clearly if a single shoot's config were larger.
const maxEnvoyFilterBytes = 1000 << 10

// shardManagedResourceName is the ManagedResource of a shard's EnvoyFilter in an ingress namespace.
func shardManagedResourceName(sh envoy.Shard) string {
	return constants.ACLSharedManagedResourceName + "-" + sh.ID()
}

// deployShards deploys a gateway's HTTP-CONNECT ACL: one EnvoyFilter per shard of its ACL shoots,
// each in a ManagedResource of its own and written only when its content changed, then the root
// EnvoyFilter (listener filters and the dispatch to the shards), then removes the shards that
// are gone. A shoot's change so rewrites its shard only; the root changes only when shards split
// or merge. Every change is an ECDS update: no listener changes, no connection is reset.
func (a *actuator) deployShards(ctx context.Context, namespace string, selector map[string]string, listeners []envoy.HTTPConnectListener, statuses []*shootStatus) error {
	if len(statuses) == 0 {
		return a.destroyShards(ctx, namespace, nil, true)
	}
	shoots := make([]envoy.ShootPolicy, len(statuses))
	weights := make([]int, len(statuses))
	contributions := make(map[string]string, len(statuses))
	for i, s := range statuses {
		shoots[i], weights[i], contributions[s.namespace] = s.policy, s.weight, s.contribution
	}
	shards, err := envoy.ShardsByWeight(shoots, weights, envoy.ShardBudgetBytes)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, sh := range shards {
		name := shardManagedResourceName(sh)
		keep[name] = true
		if err := a.deployFilter(ctx, namespace, name, inputs(selector, sh.Prefix, []any{listeners, contributionsOf(sh.Shoots, contributions)}), len(sh.Shoots), func() (*istionetworkingv1alpha3.EnvoyFilter, error) {
			return envoy.ShardEnvoyFilter(namespace, selector, sh, listeners)
		}); err != nil {
			return err
		}
	}
	var prefixes []string
	for _, sh := range shards {
		prefixes = append(prefixes, sh.Prefix)
	}
	// The root holds the shards' prefixes and the dispatch keys, nothing of the shoots beyond
	// them: a shoot that joins a shard without a key of its own leaves it as it is.
	keys, err := envoy.Dispatch(shards)
	if err != nil {
		return err
	}
	if err := a.deployFilter(ctx, namespace, constants.ACLSharedManagedResourceName, inputs(selector, strings.Join(prefixes, ","), []any{listeners, keys}), len(shoots), func() (*istionetworkingv1alpha3.EnvoyFilter, error) {
		return envoy.HTTPConnectEnvoyFilter(namespace, selector, shards, listeners)
	}); err != nil {
		return err
	}
	return a.destroyShards(ctx, namespace, keep, false)
}

// inputs fingerprints what an EnvoyFilter is rendered from.
func inputs(selector map[string]string, prefix string, v any) string {
	raw, _ := json.Marshal([]any{selector, prefix, v})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// contributionsOf fingerprints a shard's shoots by their contributions, which cover their
// policies: cheaper than encoding every policy of the shard again.
func contributionsOf(shoots []envoy.ShootPolicy, contributions map[string]string) []string {
	out := make([]string, 0, len(shoots))
	for _, s := range shoots {
		out = append(out, s.Namespace+"="+contributions[s.Namespace])
	}
	return out
}

// deployFilter deploys one EnvoyFilter in its own ManagedResource. What this process deployed
// from the same inputs is neither rendered nor written again while its ManagedResource exists:
// a rebuild costs the shards that changed.
func (a *actuator) deployFilter(ctx context.Context, namespace, name, fingerprint string, shoots int, render func() (*istionetworkingv1alpha3.EnvoyFilter, error)) error {
	key := namespace + "/" + name
	if a.deployed[key] == fingerprint {
		if err := a.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &resourcesv1alpha1.ManagedResource{}); err == nil {
			return nil
		}
	}
	ef, err := render()
	if err != nil {
		return err
	}
	raw, err := json.Marshal(ef)
	if err != nil {
		return err
	}
	if len(raw) > maxEnvoyFilterBytes {
		return fmt.Errorf("the EnvoyFilter %s/%s would be %d bytes for %d ACL shoots, more than %d: lower the CIDR limit",
			namespace, ef.Name, len(raw), shoots, maxEnvoyFilterBytes)
	}
	if err := newEnvoyFilters(a.client, namespace, name).deployOne(ctx, raw); err != nil {
		return fmt.Errorf("deploying the EnvoyFilter %s/%s: %w", namespace, ef.Name, err)
	}
	if a.deployed == nil {
		a.deployed = map[string]string{}
	}
	a.deployed[key] = fingerprint
	return nil
}

// destroyShards removes the shard ManagedResources of the namespace that are not kept, and the
// root one too if all is set.
func (a *actuator) destroyShards(ctx context.Context, namespace string, keep map[string]bool, all bool) error {
	mrs := &resourcesv1alpha1.ManagedResourceList{}
	if err := a.client.List(ctx, mrs, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("listing the ManagedResources in %s: %w", namespace, err)
	}
	for _, mr := range mrs.Items {
		shard := strings.HasPrefix(mr.Name, constants.ACLSharedManagedResourceName+"-")
		root := mr.Name == constants.ACLSharedManagedResourceName
		if (shard && !keep[mr.Name]) || (root && all) {
			if err := newEnvoyFilters(a.client, namespace, mr.Name).Destroy(ctx); err != nil {
				return err
			}
			delete(a.deployed, namespace+"/"+mr.Name)
		}
	}
	if all {
		// The root's data Secrets (its prefix also starts the shards', all gone by now).
		return newEnvoyFilters(a.client, namespace, constants.ACLSharedManagedResourceName).Destroy(ctx)
	}
	return nil
}
