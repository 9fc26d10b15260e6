package firewall

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

var _ = Describe("ShootObjects with the drop receiver", func() {
	tls := &ReceiverTLS{CertPEM: []byte("cert"), KeyPEM: []byte("key"), CABundle: []byte("bundle")}

	It("deploys the receiver only with an image, and grants it and the agent no more than the drop log needs", func() {
		without, err := ShootObjects("", nil)
		Expect(err).NotTo(HaveOccurred())
		with, err := ShootObjects("example.org/firewall-agent:v1", tls)
		Expect(err).NotTo(HaveOccurred())
		Expect(len(with) - len(without)).To(Equal(len(droptailerObjects("x", tls))))

		var rules []rbacv1.PolicyRule
		for _, o := range with {
			switch o := o.(type) {
			case *appsv1.Deployment:
				c := o.Spec.Template.Spec.Containers[0]
				Expect(c.Image).To(Equal("example.org/firewall-agent:v1"))
				Expect(c.Args).To(Equal([]string{"droptailer", "--cert-dir=/etc/firewall-drop/tls"}))
				Expect(c.VolumeMounts).To(ConsistOf(corev1.VolumeMount{Name: "tls", MountPath: "/etc/firewall-drop/tls", ReadOnly: true}))
				Expect(o.Spec.Template.Spec.Volumes[0].Secret.SecretName).To(Equal(constants.DropReceiverTLSSecretName))
				Expect(o.Spec.Template.Annotations).To(HaveKey("checksum/secret-"+constants.DropReceiverTLSSecretName), "a rotated certificate restarts it")
				Expect(*o.Spec.Template.Spec.SecurityContext.RunAsNonRoot).To(BeTrue())
			case *corev1.Secret:
				Expect(o.Data).To(Equal(map[string][]byte{"tls.crt": []byte("cert"), "tls.key": []byte("key")}))
			case *corev1.ConfigMap:
				Expect(o.Name).To(Equal(constants.DropReceiverCAConfigMapName))
				Expect(o.BinaryData).To(Equal(map[string][]byte{constants.DropReceiverCAKey: []byte("bundle")}))
			case *rbacv1.ClusterRole:
				if o.Name == constants.DroptailerClusterRoleName {
					rules = o.Rules
				}
			case *rbacv1.Role:
				Expect(o.Rules).NotTo(ContainElement(HaveField("Resources", ContainElement("serviceaccounts/token"))),
					"the agent sends its shoot credential and mints no token")
				if o.Name == constants.AgentShootRoleName {
					Expect(o.Rules).To(ContainElement(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"},
						ResourceNames: []string{constants.DropReceiverCAConfigMapName}, Verbs: []string{"get"}}), "the CA bundle, by name")
				}
			}
		}
		Expect(rules).To(ConsistOf(rbacv1.PolicyRule{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}}))
	})

	It("refuses a receiver without its certificate", func() {
		_, err := ShootObjects("example.org/firewall-agent:v1", nil)
		Expect(err).To(MatchError(ContainSubstring("needs its certificate")))
	})
})
