package charts_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/metal-firewall/gardener-extension-firewall/charts"
	admissionapp "github.com/metal-firewall/gardener-extension-firewall/cmd/gardener-extension-firewall-admission/app"
)

var _ = Describe("Admission chart", func() {
	const gardenNamespace = "garden"
	tlsValues := func() map[string]any {
		return map[string]any{"tls": map[string]any{"crt": "CERT", "key": "KEY", "caBundle": "CA"}}
	}
	renderAdmission := func(values map[string]any) []Object {
		GinkgoHelper()
		rc, err := renderer.RenderEmbeddedFS(charts.ChartFS, charts.AdmissionChartPath, "gardener-extension-firewall-admission", gardenNamespace, values)
		Expect(err).NotTo(HaveOccurred())
		return decode(rc)
	}
	admissionDeployment := func(objs []Object) *appsv1.Deployment {
		GinkgoHelper()
		d := find[*appsv1.Deployment](objs, "gardener-extension-firewall-admission")
		Expect(d).NotTo(BeNil())
		return d
	}
	webhookConfig := func(objs []Object) *admissionregistrationv1.ValidatingWebhookConfiguration {
		return find[*admissionregistrationv1.ValidatingWebhookConfiguration](objs, "gardener-extension-firewall-admission")
	}

	It("renders the admission, its health probes and its registration into one garden", func() {
		objs := renderAdmission(tlsValues())
		Expect(kindsAndNames(objs)).To(ConsistOf(
			"Deployment/gardener-extension-firewall-admission", "Service/gardener-extension-firewall-admission",
			"ServiceAccount/gardener-extension-firewall-admission", "Secret/gardener-extension-firewall-admission-tls",
			"PodDisruptionBudget/gardener-extension-firewall-admission",
			"ValidatingWebhookConfiguration/gardener-extension-firewall-admission"))

		c := admissionDeployment(objs).Spec.Template.Spec.Containers[0]
		opts := &admissionapp.Options{}
		fs := pflag.NewFlagSet("admission", pflag.ContinueOnError)
		opts.AddFlags(fs)
		Expect(fs.Parse(c.Args)).To(Succeed(), "flags the binary has")
		Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
		Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
		Expect(c.Ports).To(ContainElement(And(HaveField("Name", "health"), HaveField("ContainerPort", int32(port(opts.HealthBindAddress))))))
		Expect(c.Ports).To(ContainElement(And(HaveField("Name", "webhook-server"), HaveField("ContainerPort", int32(opts.Port)))))
		Expect(c.VolumeMounts).To(ContainElement(HaveField("MountPath", opts.CertDir)))
		opts.CertDir = GinkgoT().TempDir()
		Expect(opts.Validate()).To(Succeed())

		svc := find[*corev1.Service](objs, "gardener-extension-firewall-admission")
		wh := webhookConfig(objs).Webhooks[0]
		Expect(*wh.FailurePolicy).To(Equal(admissionregistrationv1.Fail))
		Expect(wh.ClientConfig.Service).To(And(HaveField("Name", svc.Name), HaveField("Namespace", gardenNamespace), HaveField("Path", HaveValue(Equal("/webhooks/validate-shoot")))))
		Expect(wh.ClientConfig.CABundle).To(Equal([]byte("CA")))
		Expect(*admissionDeployment(objs).Spec.Replicas).To(BeNumerically(">=", 2), "failurePolicy Fail: one pod down must not block Shoots")
	})

	It("registers the same webhook as example/garden-admission-webhook.yaml", func() {
		data, err := os.ReadFile(filepath.Join("..", "example", "garden-admission-webhook.yaml"))
		Expect(err).NotTo(HaveOccurred())
		example := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(yaml.UnmarshalStrict(data, example)).To(Succeed())
		got := webhookConfig(renderAdmission(tlsValues())).Webhooks[0]
		want := example.Webhooks[0]
		got.ClientConfig, want.ClientConfig = admissionregistrationv1.WebhookClientConfig{}, admissionregistrationv1.WebhookClientConfig{}
		Expect(got).To(Equal(want))
	})

	It("renders the runtime part only into gardener-operator's runtime cluster", func() {
		values := tlsValues()
		values["gardener"] = map[string]any{"runtimeCluster": map[string]any{"priorityClassName": "gardener-garden-system-400"}, "virtualCluster": map[string]any{"enabled": true, "namespace": "extension-x"}}
		objs := renderAdmission(values)
		Expect(webhookConfig(objs)).To(BeNil())
		Expect(admissionDeployment(objs).Spec.Template.Spec.PriorityClassName).To(Equal("gardener-garden-system-400"))
	})

	It("renders only the registration into gardener-operator's virtual garden, calling the runtime Service by name", func() {
		values := map[string]any{"tls": map[string]any{"caBundle": "CA"}, "gardener": map[string]any{"virtualCluster": map[string]any{"enabled": true}}}
		objs := renderAdmission(values)
		Expect(kindsAndNames(objs)).To(ConsistOf("ValidatingWebhookConfiguration/gardener-extension-firewall-admission"))
		Expect(webhookConfig(objs).Webhooks[0].ClientConfig.URL).To(HaveValue(Equal("https://gardener-extension-firewall-admission.garden.svc:443/webhooks/validate-shoot")))
	})

	It("reads the garden's CloudProfiles with a kubeconfig from a Secret, allowed only to get them", func() {
		values := tlsValues()
		values["garden"] = map[string]any{"kubeconfigSecret": "garden-access", "user": "system:serviceaccount:garden:firewall-admission"}
		objs := renderAdmission(values)

		d := admissionDeployment(objs)
		c := d.Spec.Template.Spec.Containers[0]
		opts := &admissionapp.Options{}
		fs := pflag.NewFlagSet("admission", pflag.ContinueOnError)
		opts.AddFlags(fs)
		Expect(fs.Parse(c.Args)).To(Succeed())
		Expect(c.VolumeMounts).To(ContainElement(And(HaveField("Name", "garden-kubeconfig"), HaveField("MountPath", filepath.Dir(opts.GardenKubeconfig)))))
		Expect(d.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("Secret.SecretName", "garden-access")))

		role := find[*rbacv1.ClusterRole](objs, "gardener-extension-firewall-admission:cloudprofiles")
		Expect(role).NotTo(BeNil())
		Expect(role.Rules).To(ConsistOf(rbacv1.PolicyRule{APIGroups: []string{"core.gardener.cloud"}, Resources: []string{"cloudprofiles", "namespacedcloudprofiles"}, Verbs: []string{"get"}}))
		binding := find[*rbacv1.ClusterRoleBinding](objs, "gardener-extension-firewall-admission:cloudprofiles")
		Expect(binding.Subjects).To(ConsistOf(HaveField("Name", "system:serviceaccount:garden:firewall-admission")))

		Expect(renderAdmission(tlsValues())).NotTo(ContainElement(BeAssignableToTypeOf(&rbacv1.ClusterRole{})), "no garden access without the Secret")
		values["gardener"] = map[string]any{"runtimeCluster": map[string]any{"priorityClassName": "p"}, "virtualCluster": map[string]any{"enabled": true}}
		Expect(find[*rbacv1.ClusterRole](renderAdmission(values), "gardener-extension-firewall-admission:cloudprofiles")).To(BeNil(), "RBAC belongs in the (virtual) garden, not the runtime cluster")
	})

	It("refuses to render without a serving certificate", func() {
		_, err := renderer.RenderEmbeddedFS(charts.ChartFS, charts.AdmissionChartPath, "a", gardenNamespace, map[string]any{"tls": map[string]any{"caBundle": "CA"}})
		Expect(err).To(MatchError(ContainSubstring("tls.crt (or tls.existingSecret) is required")))
	})
})
