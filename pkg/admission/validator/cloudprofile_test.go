package validator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/admission/validator"
)

// metalProfile is a CloudProfileConfig as metal-stack's provider-metal
// keeps it, with fields this extension does not read.
const metalProfile = `{"apiVersion":"metal.provider.extensions.gardener.cloud/v1alpha1","kind":"CloudProfileConfig",
"metalControlPlanes":{"prod":{"endpoint":"https://api.metal","nftablesExporter":{"version":"v0.1","url":"u"},
  "firewallImages":["firewall-ubuntu-3.0","firewall-ubuntu-2.0"],
  "firewallControllerVersions":[{"version":"v2.3.0","url":"u","classification":"supported"},{"version":"v2.2.0","url":"u"}],
  "partitions":{"fra-equ01":{"firewallTypes":["c1-xlarge-x86"],"networkIsolation":{"allowedNetworks":{"egress":["10.0.0.0/8"]}}}}}}}`

func newReader(objs ...client.Object) client.Reader {
	scheme := runtime.NewScheme()
	Expect(gardencorev1beta1.AddToScheme(scheme)).To(Succeed())
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

func cloudProfile(name, providerConfig string) *gardencorev1beta1.CloudProfile {
	cp := &gardencorev1beta1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if providerConfig != "" {
		cp.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(providerConfig)}
	}
	return cp
}

func firewallShoot(cloudProfileName, providerConfig string) *gardencorev1beta1.Shoot {
	s := shoot(extension("acl", `{"rule":{"action":"ALLOW","type":"remote_ip","cidrs":["1.2.3.4/24"]}}`), extension("firewall", providerConfig))
	s.Spec.CloudProfile = &gardencorev1beta1.CloudProfileReference{Kind: "CloudProfile", Name: cloudProfileName}
	return s
}

func firewallConfig(size, image, partition, extra string) string {
	return fmt.Sprintf(`{"size":%q,"image":%q,"partition":%q,"project":"p","networks":["internet"]%s}`, size, image, partition, extra)
}

func handle(v *validator.Validator, op admissionv1.Operation, s, old *gardencorev1beta1.Shoot) admission.Response {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op}}
	raw, err := json.Marshal(s)
	Expect(err).NotTo(HaveOccurred())
	req.Object.Raw = raw
	if old != nil {
		raw, err := json.Marshal(old)
		Expect(err).NotTo(HaveOccurred())
		req.OldObject.Raw = raw
	}
	return v.Handle(context.Background(), req)
}

var _ = Describe("the CloudProfile", func() {
	metal := &validator.Validator{Reader: newReader(cloudProfile("metal", metalProfile), cloudProfile("aws", `{"apiVersion":"aws.provider.extensions.gardener.cloud/v1alpha1","kind":"CloudProfileConfig"}`), cloudProfile("bare", ""))}

	DescribeTable("refuses what it does not offer, naming the field, the value and what is offered",
		func(providerConfig, want string) {
			resp := handle(metal, admissionv1.Create, firewallShoot("metal", providerConfig), nil)
			Expect(resp.Allowed).To(BeFalse())
			Expect(resp.Result.Code).To(BeEquivalentTo(422))
			Expect(resp.Result.Message).To(ContainSubstring(want))
		},
		Entry("a size", firewallConfig("n1-medium-x86", "firewall-ubuntu-3.0", "fra-equ01", ""),
			`spec.extensions[1].providerConfig.size: Invalid value: "n1-medium-x86": not in the CloudProfile's firewallTypes of partition fra-equ01: c1-xlarge-x86`),
		Entry("an image", firewallConfig("c1-xlarge-x86", "firewall-debian-1.0", "fra-equ01", ""),
			`spec.extensions[1].providerConfig.image: Invalid value: "firewall-debian-1.0": not in the CloudProfile's firewallImages: firewall-ubuntu-2.0, firewall-ubuntu-3.0`),
		Entry("a partition", firewallConfig("c1-xlarge-x86", "firewall-ubuntu-3.0", "ams1", ""),
			`spec.extensions[1].providerConfig.partition: Invalid value: "ams1": not in the CloudProfile's partitions: fra-equ01`),
		Entry("an agent version", firewallConfig("c1-xlarge-x86", "firewall-ubuntu-3.0", "fra-equ01", `,"agentVersion":"v9.9.9"`),
			`spec.extensions[1].providerConfig.agentVersion: Invalid value: "v9.9.9": not in the CloudProfile's firewallControllerVersions: v2.2.0, v2.3.0`),
	)

	It("admits a firewall the CloudProfile offers", func() {
		resp := handle(metal, admissionv1.Create, firewallShoot("metal", firewallConfig("c1-xlarge-x86", "firewall-ubuntu-3.0", "fra-equ01", `,"agentVersion":"v2.2.0"`)), nil)
		Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
		Expect(resp.Warnings).To(BeEmpty())
	})

	It("names at most 10 of the values it offers", func() {
		var images []string
		for i := range 25 {
			images = append(images, fmt.Sprintf(`"img-%02d"`, i))
		}
		profile := strings.Replace(metalProfile, `"firewall-ubuntu-3.0","firewall-ubuntu-2.0"`, strings.Join(images, ","), 1)
		v := &validator.Validator{Reader: newReader(cloudProfile("metal", profile))}
		resp := handle(v, admissionv1.Create, firewallShoot("metal", firewallConfig("c1-xlarge-x86", "firewall-ubuntu-3.0", "fra-equ01", "")), nil)
		Expect(resp.Allowed).To(BeFalse())
		Expect(resp.Result.Message).To(ContainSubstring(`"firewall-ubuntu-3.0": not in the CloudProfile's firewallImages: img-00, img-01, img-02, img-03, img-04, img-05, img-06, img-07, img-08, img-09 and 15 more`))
	})

	DescribeTable("admits anything syntactically valid when the CloudProfile is not metal-stack's",
		func(name string) {
			resp := handle(metal, admissionv1.Create, firewallShoot(name, firewallConfig("any", "any", "any", `,"agentVersion":"any"`)), nil)
			Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
		},
		Entry("another provider's CloudProfileConfig", "aws"),
		Entry("no providerConfig", "bare"),
	)

	It("still checks the syntax first", func() {
		resp := handle(metal, admissionv1.Create, firewallShoot("aws", `{"size":"s","imag":"x"}`), nil)
		Expect(resp.Allowed).To(BeFalse())
		Expect(resp.Result.Message).To(ContainSubstring(`unknown field "imag"`))
	})

	It("reads a NamespacedCloudProfile's resulting spec in the shoot's namespace", func() {
		ncp := &gardencorev1beta1.NamespacedCloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "metal-team", Namespace: "garden-p"}}
		ncp.Spec.Parent = gardencorev1beta1.CloudProfileReference{Kind: "CloudProfile", Name: "metal"}
		ncp.Status.CloudProfileSpec.ProviderConfig = &runtime.RawExtension{Raw: []byte(strings.Replace(metalProfile, `"c1-xlarge-x86"`, `"c1-xlarge-x86","c2-xlarge-x86"`, 1))}
		v := &validator.Validator{Reader: newReader(cloudProfile("metal", metalProfile), ncp)}

		s := firewallShoot("metal-team", firewallConfig("c2-xlarge-x86", "firewall-ubuntu-3.0", "fra-equ01", ""))
		s.Spec.CloudProfile.Kind = "NamespacedCloudProfile"
		Expect(handle(v, admissionv1.Create, s, nil).Allowed).To(BeTrue())

		s = firewallShoot("metal-team", firewallConfig("c3-xlarge-x86", "firewall-ubuntu-3.0", "fra-equ01", ""))
		s.Spec.CloudProfile.Kind = "NamespacedCloudProfile"
		resp := handle(v, admissionv1.Create, s, nil)
		Expect(resp.Allowed).To(BeFalse())
		Expect(resp.Result.Message).To(ContainSubstring(`size: Invalid value: "c3-xlarge-x86": not in the CloudProfile's firewallTypes of partition fra-equ01: c1-xlarge-x86, c2-xlarge-x86`))
	})

	It("reads the legacy cloudProfileName", func() {
		s := firewallShoot("", firewallConfig("n1-medium-x86", "firewall-ubuntu-3.0", "fra-equ01", ""))
		s.Spec.CloudProfile = nil
		// Shoots below Kubernetes v1.34 may still carry only the legacy field.
		s.Spec.CloudProfileName = ptr.To("metal") //nolint:staticcheck // the deprecated field is what this case is about
		resp := handle(metal, admissionv1.Create, s, nil)
		Expect(resp.Allowed).To(BeFalse())
		Expect(resp.Result.Message).To(ContainSubstring(`size: Invalid value: "n1-medium-x86"`))
	})

	It("answers an error, not an admission, when the CloudProfile cannot be read", func() {
		resp := handle(metal, admissionv1.Create, firewallShoot("gone", firewallConfig("c1-xlarge-x86", "firewall-ubuntu-3.0", "fra-equ01", "")), nil)
		Expect(resp.Allowed).To(BeFalse())
		Expect(resp.Result.Code).To(BeEquivalentTo(500))
		Expect(resp.Result.Message).To(ContainSubstring("reading the shoot's CloudProfile"))
	})

	It("admits an update that replaces the firewall, with a warning for each change", func() {
		old := firewallShoot("metal", firewallConfig("c1-xlarge-x86", "firewall-ubuntu-2.0", "fra-equ01", ""))
		resp := handle(metal, admissionv1.Update, firewallShoot("metal", firewallConfig("c1-xlarge-x86", "firewall-ubuntu-3.0", "fra-equ01", "")), old)
		Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
		Expect(resp.Warnings).To(ConsistOf(`spec.extensions[1].providerConfig.image changes from "firewall-ubuntu-2.0" to "firewall-ubuntu-3.0": a new firewall machine replaces the running one in the shoot's maintenance window`))

		agentOld := firewallShoot("metal", firewallConfig("c1-xlarge-x86", "firewall-ubuntu-3.0", "fra-equ01", `,"agentVersion":"v2.2.0"`))
		resp = handle(metal, admissionv1.Update, firewallShoot("metal", firewallConfig("c1-xlarge-x86", "firewall-ubuntu-3.0", "fra-equ01", `,"agentVersion":"v2.3.0"`)), agentOld)
		Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
		Expect(resp.Warnings).To(ConsistOf(`spec.extensions[1].providerConfig.agentVersion changes from "v2.2.0" to "v2.3.0": the firewall's agent updates itself to it in the shoot's maintenance window where the operator turned the self-update on; the machine stays`),
			"the agent version is no part of the machine")

		resp = handle(metal, admissionv1.Update, old, old)
		Expect(resp.Allowed).To(BeTrue())
		Expect(resp.Warnings).To(BeEmpty())
	})

	Describe("on an update", func() {
		// firewall-ubuntu-1.0 was offered when the shoot was created and has since been removed.
		old := firewallShoot("metal", firewallConfig("c1-xlarge-x86", "firewall-ubuntu-1.0", "fra-equ01", ""))

		It("admits a value the CloudProfile no longer offers while it stays, without reading the CloudProfile", func() {
			s := firewallShoot("metal", firewallConfig("c1-xlarge-x86", "firewall-ubuntu-1.0", "fra-equ01", `,"internalPrefixes":["10.0.0.0/8"]`))
			unreadable := &validator.Validator{Reader: newReader()}
			resp := handle(unreadable, admissionv1.Update, s, old)
			Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
			Expect(handle(unreadable, admissionv1.Create, s, nil).Result.Code).To(BeEquivalentTo(500), "a create does read it")
		})

		It("checks only the changed value", func() {
			resp := handle(metal, admissionv1.Update, firewallShoot("metal", firewallConfig("n1-medium-x86", "firewall-ubuntu-1.0", "fra-equ01", "")), old)
			Expect(resp.Allowed).To(BeFalse())
			Expect(resp.Result.Message).To(ContainSubstring(`size: Invalid value: "n1-medium-x86"`))
			Expect(resp.Result.Message).NotTo(ContainSubstring("image"))
		})

		It("refuses a new image the CloudProfile does not offer", func() {
			resp := handle(metal, admissionv1.Update, firewallShoot("metal", firewallConfig("c1-xlarge-x86", "firewall-ubuntu-1.1", "fra-equ01", "")), old)
			Expect(resp.Allowed).To(BeFalse())
			Expect(resp.Result.Message).To(ContainSubstring(`image: Invalid value: "firewall-ubuntu-1.1": not in the CloudProfile's firewallImages`))
		})
	})

	It("warns about a new size even without a metal CloudProfile", func() {
		old := firewallShoot("aws", firewallConfig("a", "i", "p", ""))
		resp := handle(metal, admissionv1.Update, firewallShoot("aws", firewallConfig("b", "i", "p", "")), old)
		Expect(resp.Allowed).To(BeTrue())
		Expect(resp.Warnings).To(ConsistOf(ContainSubstring(`spec.extensions[1].providerConfig.size changes from "a" to "b": a new firewall machine replaces the running one when the shoot is reconciled`)))
	})
})
