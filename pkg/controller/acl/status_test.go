package acl

import (
	"context"
	"net/netip"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/envoy"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/acl/providerstatus"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/cidr"
)

var _ = Describe("status", func() {
	It("round-trips through the Extension's providerStatus", func() {
		p, _ := validation.Parse([]byte(`{"rule":{"action":"ALLOW","type":"direct_remote_ip","cidrs":["1.2.3.4/24"]}}`), validation.Limits{})
		always := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
		shoot := envoy.NewShootPolicy("shoot--p--a", p, always)
		st := newStatus(p, shoot, always, []ingress{{namespace: "istio-ingress", selector: map[string]string{"a": "b"}, hosts: []string{"h"}}})
		ex := &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "acl", Namespace: "shoot--p--a"}, Spec: extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: constants.ACLExtensionType}}}
		a := newTestActuator(Config{}, ex)
		Expect(a.updateStatus(context.Background(), ex, st)).To(Succeed())

		got, hosts, ok := providerstatus.Policy(ex)
		Expect(ok).To(BeTrue())
		Expect(hosts).To(Equal([]string{"h"}))
		Expect(got.Type).To(Equal("direct_remote_ip"))
		Expect(cidr.Strings(got.Allowed)).To(Equal(cidr.Strings(shoot.Allowed)))

		ex.Spec.Type = "other"
		_, _, ok = providerstatus.Policy(ex)
		Expect(ok).To(BeFalse(), "a non-acl Extension has no policy")
	})
})
