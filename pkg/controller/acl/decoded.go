package acl

import (
	"bytes"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/providerstatus"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// shootStatus is what a rebuild derives from one shoot's status.
type shootStatus struct {
	namespace    string
	raw          []byte
	status       *v1alpha1.ExtensionStatus
	policy       envoy.ShootPolicy
	contribution string
	weight       int
}

// decodedStatuses keeps each shoot's shootStatus while its providerStatus stays the same bytes:
// a rebuild reads every ACL shoot, and decoding, fingerprinting and weighing thousands of
// unchanged statuses each time cost more than the shard it writes. Only rebuilds use it, and
// they run one at a time.
type decodedStatuses map[string]*shootStatus

// of returns the shoot's status as a rebuild uses it, nil when it has none (or one that does
// not decode: that shoot's reconciliation reports it).
func (d decodedStatuses) of(ex *extensionsv1alpha1.Extension) *shootStatus {
	if ex.Spec.Type != constants.ACLExtensionType || ex.DeletionTimestamp != nil || ex.Status.ProviderStatus == nil {
		return nil
	}
	raw := ex.Status.ProviderStatus.Raw
	if s, ok := d[ex.Namespace]; ok && bytes.Equal(s.raw, raw) {
		return s
	}
	st, err := providerstatus.Decode(ex)
	if err != nil || st == nil {
		return nil
	}
	policy := providerstatus.ShootPolicy(ex.Namespace, st)
	s := &shootStatus{namespace: ex.Namespace, raw: raw, status: st, policy: policy,
		contribution: contribution(ex.Namespace, st), weight: envoy.Weight(policy)}
	d[ex.Namespace] = s
	return s
}

// retain forgets the shoots a rebuild no longer saw (deleted, or their status cleared).
func (d decodedStatuses) retain(seen []*shootStatus) {
	keep := make(map[string]bool, len(seen))
	for _, s := range seen {
		keep[s.namespace] = true
	}
	for ns := range d {
		if !keep[ns] {
			delete(d, ns)
		}
	}
}
