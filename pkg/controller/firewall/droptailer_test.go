package firewall

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

var _ = Describe("ShootObjects with the drop receiver", func() {
	It("deploys the receiver only with an image, and grants it and the agent no more than the drop log needs", func() {
		without, err := ShootObjects("")
		Expect(err).NotTo(HaveOccurred())
		with, err := ShootObjects("example.org/firewall-agent:v1")
		Expect(err).NotTo(HaveOccurred())
		Expect(len(with) - len(without)).To(Equal(len(droptailerObjects("x"))))

		var rules []rbacv1.PolicyRule
		for _, o := range with {
			switch o := o.(type) {
			case *appsv1.Deployment:
				c := o.Spec.Template.Spec.Containers[0]
				Expect(c.Image).To(Equal("example.org/firewall-agent:v1"))
				Expect(c.Args).To(Equal([]string{"droptailer"}))
				Expect(*o.Spec.Template.Spec.SecurityContext.RunAsNonRoot).To(BeTrue())
			case *rbacv1.ClusterRole:
				if o.Name == constants.DroptailerClusterRoleName {
					rules = o.Rules
				}
			case *rbacv1.Role:
				if o.Name == constants.AgentDropTokenRoleName {
					Expect(o.Namespace).To(Equal("kube-system"))
					Expect(o.Rules).To(ConsistOf(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"},
						ResourceNames: []string{constants.AgentServiceAccountName}, Verbs: []string{"create"}}))
				}
			}
		}
		Expect(rules).To(ConsistOf(rbacv1.PolicyRule{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}}))
	})
})
