package charts_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/metal-firewall/gardener-extension-firewall/cmd/gardener-extension-firewall/app"
)

var _ = Describe("Chart", func() {
	It("renders with its defaults, the seed API server and gardenlet's values", func() {
		Expect(kindsAndNames(objects(minimalValues()))).To(ConsistOf(
			"CustomResourceDefinition/firewalldeployments.firewall.metal-firewall.io",
			"CustomResourceDefinition/firewallsets.firewall.metal-firewall.io",
			"CustomResourceDefinition/firewalls.firewall.metal-firewall.io",
			"ServiceAccount/gardener-extension-firewall",
			"ClusterRole/gardener-extension-firewall",
			"ClusterRole/gardener-extension-firewall:agent-csr",
			"ClusterRoleBinding/gardener-extension-firewall",
			"Role/gardener-extension-firewall",
			"RoleBinding/gardener-extension-firewall",
			"Deployment/gardener-extension-firewall",
			"Service/gardener-extension-firewall",
			"VerticalPodAutoscaler/gardener-extension-firewall",
			"PodDisruptionBudget/gardener-extension-firewall",
			"ValidatingAdmissionPolicy/gardener-extension-firewall-csr",
			"ValidatingAdmissionPolicyBinding/gardener-extension-firewall-csr",
		))
	})

	It("refuses to render without the seed API server, naming the value", func() {
		_, err := render(map[string]any{})
		Expect(err).To(MatchError(ContainSubstring("seedAPIServer.url (or seedAPIServer.seeds.<seed name>.url) is required")))
	})

	It("takes the seed API server of the seed it is rendered for", func() {
		values := with(minimalValues(), []string{"seedAPIServer", "seeds"}, map[string]any{
			"seed-b": map[string]any{"url": "https://api.seed-b.example.com", "caBundle": "-----BEGIN CERTIFICATE-----\nB\n-----END CERTIFICATE-----\n"},
		})
		objs := objects(values)
		Expect(args(objs)).To(ContainElement("--seed-server=" + seedURL))
		Expect(find[*corev1.ConfigMap](objs, "gardener-extension-firewall-seed-ca")).To(BeNil(), "no CA bundle given for seed-a")
		Expect(seedCAVolume(objs).ConfigMap.Name).To(Equal("kube-root-ca.crt"))

		objs = objects(with(values, []string{"gardener", "seed", "name"}, "seed-b"))
		Expect(args(objs)).To(ContainElement("--seed-server=https://api.seed-b.example.com"))
		cm := find[*corev1.ConfigMap](objs, "gardener-extension-firewall-seed-ca")
		Expect(cm).NotTo(BeNil())
		Expect(cm.Data).To(HaveKeyWithValue("ca.crt", "-----BEGIN CERTIFICATE-----\nB\n-----END CERTIFICATE-----\n"))
		Expect(seedCAVolume(objs).ConfigMap.Name).To(Equal(cm.Name))
	})

	DescribeTable("toggles",
		func(path []string, value any, gone []string, argsGone []string) {
			before := objects(minimalValues())
			after := objects(with(minimalValues(), path, value))
			Expect(kindsAndNames(before)).To(ContainElements(gone), "renders by default")
			Expect(kindsAndNames(after)).NotTo(ContainElements(gone))
			Expect(len(after)).To(Equal(len(before)-len(gone)), "nothing else goes")
			for _, a := range argsGone {
				Expect(args(before)).To(ContainElement(HavePrefix(a)))
				Expect(args(after)).NotTo(ContainElement(HavePrefix(a)))
			}
		},
		Entry("vpa.enabled", []string{"vpa", "enabled"}, false, []string{"VerticalPodAutoscaler/gardener-extension-firewall"}, nil),
		Entry("podDisruptionBudget.enabled", []string{"podDisruptionBudget", "enabled"}, false, []string{"PodDisruptionBudget/gardener-extension-firewall"}, nil),
		Entry("webhook.enabled", []string{"webhook", "enabled"}, false, []string{"Service/gardener-extension-firewall"},
			[]string{"--webhook-port=", "--webhook-cert-dir=", "--webhook-config-namespace=", "--webhook-config-service-port="}),
		Entry("crds.enabled", []string{"crds", "enabled"}, false, []string{
			"CustomResourceDefinition/firewalldeployments.firewall.metal-firewall.io",
			"CustomResourceDefinition/firewallsets.firewall.metal-firewall.io",
			"CustomResourceDefinition/firewalls.firewall.metal-firewall.io",
		}, nil),
	)

	It("without the webhook, grants nothing for its registration and opens no port", func() {
		objs := objects(with(minimalValues(), []string{"webhook", "enabled"}, false))
		role := find[*rbacv1.ClusterRole](objs, "gardener-extension-firewall")
		for _, r := range role.Rules {
			Expect(r.Resources).NotTo(ContainElement("mutatingwebhookconfigurations"))
		}
		Expect(container(objs).Ports).NotTo(ContainElement(HaveField("Name", "webhook-server")))
		Expect(volumes(objs)).NotTo(ContainElement(HaveField("Name", "webhook-certs")))
	})

	It("wires the webhook Service to the server the binary registers", func() {
		objs := objects(minimalValues())
		svc := find[*corev1.Service](objs, app.WebhookServiceName)
		Expect(svc).NotTo(BeNil(), "the binary registers the webhook at Service %s", app.WebhookServiceName)
		Expect(svc.Namespace).To(Equal(namespace))
		Expect(svc.Spec.Ports).To(HaveLen(1))
		opts := parsedOptions(objs)
		Expect(svc.Spec.Ports[0].Port).To(BeEquivalentTo(opts.WebhookConfigServicePort))
		Expect(svc.Spec.Ports[0].TargetPort.IntValue()).To(Equal(opts.WebhookPort))
		Expect(container(objs).Ports).To(ContainElement(And(HaveField("Name", "webhook-server"), HaveField("ContainerPort", BeEquivalentTo(opts.WebhookPort)))))
		Expect(svc.Spec.Selector).To(Equal(deployment(objs).Spec.Selector.MatchLabels))
		Expect(opts.WebhookConfigNamespace).To(Equal(namespace))
		Expect(container(objs).VolumeMounts).To(ContainElement(And(HaveField("Name", "webhook-certs"), HaveField("MountPath", opts.WebhookCertDir))))
	})

	It("probes the health port the binary serves", func() {
		objs := objects(minimalValues())
		c := container(objs)
		Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
		Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
		Expect(c.LivenessProbe.HTTPGet.Port.StrVal).To(Equal("health"))
		Expect(c.ReadinessProbe.HTTPGet.Port.StrVal).To(Equal("health"))
		Expect(c.Ports).To(ContainElement(And(HaveField("Name", "health"), HaveField("ContainerPort", BeEquivalentTo(port(parsedOptions(objs).HealthProbeBindAddress))))))
		Expect(c.Resources.Requests).NotTo(BeEmpty())
	})

	It("elects a leader in its own namespace with the Lease its Role names", func() {
		objs := objects(minimalValues())
		Expect(parsedOptions(objs).LeaderElection).To(BeTrue())
		Expect(parsedOptions(objs).LeaderElectionNamespace).To(Equal(namespace))
		role := find[*rbacv1.Role](objs, "gardener-extension-firewall")
		Expect(role.Namespace).To(Equal(namespace))
		Expect(role.Rules).To(ContainElement(And(
			HaveField("Resources", ConsistOf("leases")),
			HaveField("ResourceNames", ConsistOf(app.LeaderElectionID)),
			HaveField("Verbs", ContainElements("get", "update")),
		)))
	})

	It("runs the metal provider by default, unprivileged, with the HMAC key from a Secret file", func() {
		values := with(minimalValues(), []string{"machineProvider", "metal", "url"}, "https://metal.example.com/metal")
		with(values, []string{"machineProvider", "metal", "hmac"}, "the-hmac-key")
		objs := objects(values)
		sc := container(objs).SecurityContext
		Expect(sc.Privileged).To(BeNil())
		Expect(*sc.RunAsNonRoot).To(BeTrue())
		Expect(*sc.AllowPrivilegeEscalation).To(BeFalse())
		Expect(args(objs)).NotTo(ContainElement(HavePrefix("--local-")))
		Expect(strings.Join(args(objs), " ")).NotTo(ContainSubstring("the-hmac-key"), "the key is never an argument")

		opts := parsedOptions(objs)
		Expect(opts.MachineProvider).To(Equal("metal"))
		Expect(opts.Metal.URL).To(Equal("https://metal.example.com/metal"))
		secret := find[*corev1.Secret](objs, "gardener-extension-firewall-metal-api")
		Expect(secret).NotTo(BeNil())
		Expect(secret.Data).To(HaveKeyWithValue("hmac", []byte("the-hmac-key")))
		var vol corev1.Volume
		for _, v := range volumes(objs) {
			if v.Name == "metal-api" {
				vol = v
			}
		}
		Expect(vol.Secret).To(HaveField("SecretName", secret.Name))
		Expect(*vol.Secret.DefaultMode).To(Equal(int32(0o440)))
		Expect(*deployment(objs).Spec.Template.Spec.SecurityContext.FSGroup).To(Equal(*sc.RunAsUser), "the non-root user reads the key through its group")
		Expect(container(objs).VolumeMounts).To(ContainElement(And(HaveField("Name", "metal-api"), HaveField("MountPath", filepath.Dir(opts.Metal.HMACFile)))))
		Expect(deployment(objs).Spec.Template.Labels).To(And(
			HaveKeyWithValue("networking.gardener.cloud/to-public-networks", "allowed"),
			HaveKeyWithValue("networking.gardener.cloud/to-private-networks", "allowed")), "Gardener's network policies let it reach the metal-api")

		By("the binary starts with what the chart gives it: the flags validate and the provider is set up")
		Expect(validate(opts)).To(Succeed())
		key := filepath.Join(GinkgoT().TempDir(), "hmac")
		Expect(os.WriteFile(key, secret.Data["hmac"], 0o400)).To(Succeed())
		opts.Metal.HMACFile = key
		_, err := app.NewMachineProvider(opts)
		Expect(err).NotTo(HaveOccurred())
	})

	It("takes the HMAC key from an existing Secret instead", func() {
		values := with(minimalValues(), []string{"machineProvider", "metal", "existingSecret"}, map[string]any{"name": "my-metal-key", "key": "key"})
		objs := objects(values)
		Expect(find[*corev1.Secret](objs, "gardener-extension-firewall-metal-api")).To(BeNil())
		for _, v := range volumes(objs) {
			if v.Name == "metal-api" {
				Expect(v.Secret.SecretName).To(Equal("my-metal-key"))
				Expect(v.Secret.Items).To(ConsistOf(corev1.KeyToPath{Key: "key", Path: "hmac"}))
			}
		}
	})

	It("runs the local machine provider privileged with its state in the pod, only when asked for", func() {
		objs := objects(with(minimalValues(), []string{"machineProvider", "type"}, "local"))
		Expect(*container(objs).SecurityContext.Privileged).To(BeTrue())
		opts := parsedOptions(objs)
		Expect(container(objs).VolumeMounts).To(ContainElement(HaveField("MountPath", opts.LocalStateDir)))
		Expect(args(objs)).NotTo(ContainElement(HavePrefix("--metal-api-")))
		Expect(deployment(objs).Spec.Template.Labels).NotTo(HaveKey("networking.gardener.cloud/to-public-networks"), "no metal-api to reach")
	})

	It("hands the agents' release key to the binary from a ConfigMap, which validates it, only when given", func() {
		Expect(parsedOptions(objects(minimalValues())).AgentUpdatePublicKeyFile).To(BeEmpty())
		Expect(find[*corev1.ConfigMap](objects(minimalValues()), "gardener-extension-firewall-agent-update-key")).To(BeNil())

		pub, _, err := ed25519.GenerateKey(rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		der, err := x509.MarshalPKIXPublicKey(pub)
		Expect(err).NotTo(HaveOccurred())
		key := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
		objs := objects(with(minimalValues(), []string{"firewall", "agentUpdatePublicKey"}, key))
		cm := find[*corev1.ConfigMap](objs, "gardener-extension-firewall-agent-update-key")
		Expect(cm).NotTo(BeNil())
		Expect(cm.Data).To(HaveKeyWithValue("key.pem", key))
		opts := parsedOptions(objs)
		Expect(container(objs).VolumeMounts).To(ContainElement(And(HaveField("Name", "agent-update-key"), HaveField("MountPath", filepath.Dir(opts.AgentUpdatePublicKeyFile)))))
		Expect(volumes(objs)).To(ContainElement(And(HaveField("Name", "agent-update-key"), HaveField("ConfigMap.Name", cm.Name))))
		// The file the pod would hold, where the test can write it.
		opts.AgentUpdatePublicKeyFile = filepath.Join(GinkgoT().TempDir(), "key.pem")
		Expect(os.WriteFile(opts.AgentUpdatePublicKeyFile, []byte(cm.Data["key.pem"]), 0o600)).To(Succeed())
		Expect(validate(opts)).To(Succeed())
		Expect(os.WriteFile(opts.AgentUpdatePublicKeyFile, []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"), 0o600)).To(Succeed())
		Expect(opts.Validate()).To(MatchError(ContainSubstring("--agent-update-public-key " + opts.AgentUpdatePublicKeyFile)))
	})

	It("binds its ServiceAccount, whose token Gardener projects", func() {
		objs := objects(minimalValues())
		sa := find[*corev1.ServiceAccount](objs, "gardener-extension-firewall")
		Expect(*sa.AutomountServiceAccountToken).To(BeFalse())
		Expect(deployment(objs).Spec.Template.Spec.ServiceAccountName).To(Equal(sa.Name))
		for _, subjects := range [][]rbacv1.Subject{
			find[*rbacv1.ClusterRoleBinding](objs, "gardener-extension-firewall").Subjects,
			find[*rbacv1.RoleBinding](objs, "gardener-extension-firewall").Subjects,
		} {
			Expect(subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: sa.Name, Namespace: namespace}))
		}
	})
})

func deployment(objs []Object) *appsv1.Deployment {
	d := find[*appsv1.Deployment](objs, "gardener-extension-firewall")
	ExpectWithOffset(1, d).NotTo(BeNil())
	return d
}

func container(objs []Object) corev1.Container {
	cs := deployment(objs).Spec.Template.Spec.Containers
	ExpectWithOffset(1, cs).To(HaveLen(1))
	return cs[0]
}

func args(objs []Object) []string { return container(objs).Args }

func volumes(objs []Object) []corev1.Volume { return deployment(objs).Spec.Template.Spec.Volumes }

func seedCAVolume(objs []Object) corev1.Volume {
	for _, v := range volumes(objs) {
		if v.Name == "seed-ca" {
			return v
		}
	}
	Fail("no seed-ca volume")
	return corev1.Volume{}
}

var _ = Describe("Image", func() {
	It("is the one reference given, so that skaffold can set it", func() {
		objs := objects(with(minimalValues(), []string{"image"}, "local-skaffold/gardener-extension-firewall:dev"))
		Expect(container(objs).Image).To(Equal("local-skaffold/gardener-extension-firewall:dev"))
	})
})
