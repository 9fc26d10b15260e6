package acl

import (
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// newTestActuator returns the actuator on a fake client holding objs.
func newTestActuator(cfg Config, objs ...client.Object) *actuator {
	GinkgoHelper()
	c := fake.NewClientBuilder().WithScheme(kubernetes.SeedScheme).WithObjects(objs...).WithStatusSubresource(&extensionsv1alpha1.Infrastructure{}, &extensionsv1alpha1.Extension{}).Build()
	a, err := NewActuator(c, c, cfg)
	Expect(err).NotTo(HaveOccurred())
	return a.(*actuator)
}

var _ = Describe("NewActuator", func() {
	It("refuses a bad operator CIDR", func() {
		_, err := NewActuator(nil, nil, Config{AlwaysAllowedCIDRs: []string{"10.0.0.0/33"}})
		Expect(err).To(MatchError(ContainSubstring(`operator's always-allowed CIDR "10.0.0.0/33"`)))
	})
})
