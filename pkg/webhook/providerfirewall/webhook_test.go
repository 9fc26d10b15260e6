package providerfirewall_test

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/webhook/providerfirewall"
)

const shootNS = "shoot--p--a"

func extension(typ string, deleting bool) *extensionsv1alpha1.Extension {
	ex := &extensionsv1alpha1.Extension{
		ObjectMeta: metav1.ObjectMeta{Name: typ, Namespace: shootNS},
		Spec:       extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: typ}},
	}
	if deleting {
		ex.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		ex.Finalizers = []string{"extensions.gardener.cloud/firewall"}
	}
	return ex
}

func ownDeployment(ready int32) *firewallv1alpha1.FirewallDeployment {
	return &firewallv1alpha1.FirewallDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: constants.FirewallDeploymentName, Namespace: shootNS},
		Status:     firewallv1alpha1.FirewallDeploymentStatus{ReadyReplicas: ready},
	}
}

// gepmWrite is firewall-controller-manager's FirewallDeployment as
// provider-metal's worker writes it (the fields the webhook reads), with the
// status FCM last stored.
func gepmWrite(replicas any, ready int, annotations map[string]string) admission.Request {
	GinkgoHelper()
	obj := map[string]any{
		"apiVersion": "firewall.metal-stack.io/v2", "kind": "FirewallDeployment",
		"metadata": map[string]any{"name": "firewall", "namespace": shootNS, "annotations": annotations},
		"spec":     map[string]any{"replicas": replicas, "template": map[string]any{"spec": map[string]any{"size": "n1-medium-x86"}}},
		"status":   map[string]any{"readyReplicas": ready},
	}
	raw, err := json.Marshal(obj)
	Expect(err).NotTo(HaveOccurred())
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Name: "firewall", Namespace: shootNS, Operation: admissionv1.Update, Object: runtime.RawExtension{Raw: raw},
	}}
}

func handle(req admission.Request, objs ...client.Object) admission.Response {
	GinkgoHelper()
	scheme := runtime.NewScheme()
	Expect(kubernetes.AddSeedSchemeToScheme(scheme)).To(Succeed())
	Expect(firewallv1alpha1.AddToScheme(scheme)).To(Succeed())
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	return (&providerfirewall.Mutator{Reader: c}).Handle(context.Background(), req)
}

// applied is the object after the response's patch, applied with the JSON
// patch library the kube-apiserver applies webhooks' patches with.
func applied(req admission.Request, resp admission.Response) map[string]any {
	GinkgoHelper()
	ops, err := json.Marshal(resp.Patches)
	Expect(err).NotTo(HaveOccurred())
	patch, err := jsonpatch.DecodePatch(ops)
	Expect(err).NotTo(HaveOccurred())
	out, err := patch.Apply(req.Object.Raw)
	Expect(err).NotTo(HaveOccurred())
	obj := map[string]any{}
	Expect(json.Unmarshal(out, &obj)).To(Succeed())
	return obj
}

var _ = Describe("Mutator", func() {
	held := func(resp admission.Response, req admission.Request, from string) {
		GinkgoHelper()
		Expect(resp.Allowed).To(BeTrue())
		Expect(resp.Patches).NotTo(BeEmpty())
		obj := applied(req, resp)
		Expect(obj).To(HaveKeyWithValue("spec", HaveKeyWithValue("replicas", BeEquivalentTo(0))))
		Expect(obj).To(HaveKeyWithValue("metadata", HaveKeyWithValue("annotations", And(
			HaveKeyWithValue(constants.AnnotationHeldReplicas, from),
			HaveKeyWithValue("firewall.metal-stack.io/reconcile", "true")))), "the writer's annotations stay")
		Expect(obj).To(HaveKeyWithValue("spec", HaveKeyWithValue("template", Not(BeEmpty()))), "nothing else changes")
	}
	passes := func(resp admission.Response) {
		GinkgoHelper()
		Expect(resp.Allowed).To(BeTrue())
		Expect(resp.Patches).To(BeEmpty())
	}
	gepm := map[string]string{"firewall.metal-stack.io/reconcile": "true"}

	It("holds a new shoot's deployment at 0 replicas: nothing to switch from", func() {
		req := gepmWrite(1, 0, gepm)
		held(handle(req, extension("firewall", false)), req, "1")
	})

	It("keeps the replicas the writer asked for, to give them back", func() {
		req := gepmWrite(2, 0, nil)
		resp := handle(req, extension("firewall", false))
		Expect(applied(req, resp)).To(HaveKeyWithValue("metadata", HaveKeyWithValue("annotations", HaveKeyWithValue(constants.AnnotationHeldReplicas, "2"))))
	})

	It("holds a running firewall's deployment only once the extension's own firewall is Ready", func() {
		req := gepmWrite(1, 1, gepm)
		passes(handle(req, extension("firewall", false)))
		passes(handle(req, extension("firewall", false), ownDeployment(0)))
		held(handle(req, extension("firewall", false), ownDeployment(1)), req, "1")
	})

	It("passes the writes of namespaces without a firewall Extension, or whose Extension is being deleted", func() {
		req := gepmWrite(1, 0, gepm)
		passes(handle(req))
		passes(handle(req, extension("acl", false)))
		passes(handle(req, extension("firewall", true), ownDeployment(1)))
	})

	It("changes nothing where the replicas are held already", func() {
		passes(handle(gepmWrite(0, 0, gepm), extension("firewall", false)))
	})

	It("refuses what it cannot read, naming the field", func() {
		resp := handle(gepmWrite("one", 0, gepm), extension("firewall", false))
		Expect(resp.Allowed).To(BeFalse())
		Expect(resp.Result.Code).To(BeEquivalentTo(http.StatusBadRequest))
		Expect(resp.Result.Message).To(And(ContainSubstring("shoot--p--a/firewall"), ContainSubstring("spec.replicas")))

		req := gepmWrite(1, 0, nil)
		req.Object.Raw = []byte("{")
		resp = handle(req, extension("firewall", false))
		Expect(resp.Allowed).To(BeFalse())
		Expect(resp.Result.Code).To(BeEquivalentTo(http.StatusBadRequest))
	})

	It("is scoped to the shoot namespaces gardenlet labels with the firewall type, and fails closed", func() {
		wh := providerfirewall.Webhook(admissionregistrationClientConfig())
		Expect(wh.NamespaceSelector.MatchLabels).To(Equal(map[string]string{"extensions.gardener.cloud/firewall": "true"}))
		Expect(wh.Rules).To(HaveLen(1))
		Expect(wh.Rules[0].APIGroups).To(Equal([]string{"firewall.metal-stack.io"}))
		Expect(wh.Rules[0].Resources).To(Equal([]string{"firewalldeployments"}))
		Expect(*wh.FailurePolicy).To(BeEquivalentTo("Fail"))
	})
})
