package acl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"sort"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/providerstatus"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

// newStatus is what the Extension reports: the rule, the CIDRs in force and where. The webhook
// and the shared filter are built from it.
func newStatus(p *validation.Policy, s envoy.ShootPolicy, always []netip.Prefix, ingresses []ingress) *v1alpha1.ExtensionStatus {
	st := &v1alpha1.ExtensionStatus{
		APIVersion:         v1alpha1.SchemeGroupVersion,
		Kind:               "ExtensionStatus",
		Action:             p.Action,
		Type:               p.Type,
		RuleCIDRs:          cidr.Strings(p.CIDRs),
		AlwaysAllowedCIDRs: cidr.Strings(always),
		AllowedCIDRs:       cidr.Strings(s.Allowed),
		DeniedCIDRs:        cidr.Strings(s.Denied),
	}
	if p.Action == v1alpha1.ActionAllow {
		st.DeniedCIDRs = nil
	} else {
		st.AllowedCIDRs = nil
	}
	for _, in := range ingresses {
		st.IngressNamespaces = append(st.IngressNamespaces, in.namespace)
		st.Hosts = append(st.Hosts, in.hosts...)
		if st.Selectors == nil {
			st.Selectors = map[string]map[string]string{}
		}
		st.Selectors[in.namespace] = in.selector
	}
	sort.Strings(st.Hosts)
	st.Hosts = slices.Compact(st.Hosts)
	return st
}

func (a *actuator) updateStatus(ctx context.Context, ex *extensionsv1alpha1.Extension, st *v1alpha1.ExtensionStatus) error {
	raw, err := providerstatus.Encode(st)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(ex.DeepCopy())
	ex.Status.ProviderStatus = raw
	if err := a.client.Status().Patch(ctx, ex, patch); err != nil {
		return fmt.Errorf("reporting the allow-list: %w", err)
	}
	a.shared.expect(ex.Namespace, contribution(ex.Namespace, st))
	return nil
}

// clearStatus removes the providerStatus, if there is one.
func (a *actuator) clearStatus(ctx context.Context, ex *extensionsv1alpha1.Extension) error {
	if ex.Status.ProviderStatus == nil {
		return nil
	}
	patch := client.MergeFrom(ex.DeepCopy())
	ex.Status.ProviderStatus = nil
	if err := a.client.Status().Patch(ctx, ex, patch); err != nil {
		return fmt.Errorf("clearing the status: %w", err)
	}
	a.shared.expect(ex.Namespace, "")
	return nil
}

// hash identifies a status; written into Gardener's EnvoyFilter, it makes the webhook inject anew.
func hash(st *v1alpha1.ExtensionStatus) string {
	raw, _ := json.Marshal(st)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}
