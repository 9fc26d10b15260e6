package localsetup_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	"github.com/gardener/gardener/pkg/chartrenderer"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/metal-firewall/gardener-extension-firewall/charts"
	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

const (
	registry = "registry.local.gardener.cloud:5001"
	// chartArtifact and imageArtifact are skaffold.yaml's images.
	chartArtifact = "local-skaffold/gardener-extension-firewall/charts/extension"
	imageArtifact = "local-skaffold/gardener-extension-firewall"
)

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	Expect(operatorv1alpha1.AddToScheme(s)).To(Succeed())
	return s
}

// skaffoldConfig is the part of skaffold.yaml this test reads.
type skaffoldConfig struct {
	Build struct {
		Artifacts []struct {
			Image string `json:"image"`
			Ko    *struct {
				Main string `json:"main"`
			} `json:"ko"`
			Custom *struct {
				BuildCommand string `json:"buildCommand"`
			} `json:"custom"`
			Requires []struct {
				Image string `json:"image"`
				Alias string `json:"alias"`
			} `json:"requires"`
		} `json:"artifacts"`
	} `json:"build"`
}

// rendered is what `skaffold render` makes of dev-setup/local for the tag given.
func rendered(tag string) *operatorv1alpha1.Extension {
	GinkgoHelper()
	out, err := run(testenv.RepoRoot(), filepath.Join(tools, "skaffold"), "render", "--offline=true",
		"--digest-source=tag", "--default-repo="+registry, "--tag="+tag)
	Expect(err).NotTo(HaveOccurred(), out)
	// skaffold says on stderr what it did; the manifests start at the first apiVersion.
	_, manifest, ok := strings.Cut(out, "apiVersion:")
	Expect(ok).To(BeTrue(), out)
	obj, _, err := serializer.NewCodecFactory(scheme(), serializer.EnableStrict).UniversalDeserializer().
		Decode([]byte("apiVersion:"+manifest), nil, nil)
	Expect(err).NotTo(HaveOccurred(), manifest)
	ext, ok := obj.(*operatorv1alpha1.Extension)
	Expect(ok).To(BeTrue(), "got %T", obj)
	return ext
}

var _ = Describe("Gardener's local setup (make extension-up)", func() {
	It("is a valid skaffold config whose artifacts build what exists", func() {
		root := testenv.RepoRoot()
		out, err := run(root, filepath.Join(tools, "skaffold"), "diagnose", "--yaml-only")
		Expect(err).NotTo(HaveOccurred(), out)

		raw, err := os.ReadFile(filepath.Join(root, "skaffold.yaml"))
		Expect(err).NotTo(HaveOccurred())
		cfg := &skaffoldConfig{}
		Expect(yaml.Unmarshal(raw, cfg)).To(Succeed())
		images := map[string]bool{}
		for _, a := range cfg.Build.Artifacts {
			images[a.Image] = true
			switch {
			case a.Ko != nil:
				Expect(filepath.Join(root, a.Ko.Main, "main.go")).To(BeAnExistingFile(), a.Image)
			case a.Custom != nil:
				// Gardener's push-helm.sh, from the module go.mod pins, with the chart and
				// the values key (a string) it writes the image into.
				Expect(filepath.Join(gardenerDir, "hack/push-helm.sh")).To(BeAnExistingFile())
				fields := strings.Fields(a.Custom.BuildCommand)
				Expect(fields).To(HaveLen(4), a.Custom.BuildCommand)
				Expect(fields[1]).To(Equal(`"$GARDENER_HACK_DIR/push-helm.sh"`))
				Expect(filepath.Join(root, fields[2], "Chart.yaml")).To(BeAnExistingFile())
				values := map[string]any{}
				rawValues, err := os.ReadFile(filepath.Join(root, fields[2], "values.yaml"))
				Expect(err).NotTo(HaveOccurred())
				Expect(yaml.Unmarshal(rawValues, &values)).To(Succeed())
				Expect(values).To(HaveKeyWithValue(strings.TrimPrefix(fields[3], "."), BeAssignableToTypeOf("")))
				Expect(a.Requires).To(ConsistOf(HaveField("Alias", "IMG")), "push-helm.sh reads the image from IMG")
			default:
				Fail("artifact " + a.Image + " has no builder this test knows")
			}
		}
		Expect(images).To(HaveKey(imageArtifact))
		Expect(images).To(HaveKey(chartArtifact))
	})

	It("renders gardener-operator's Extension with the chart skaffold built, and the CRD takes it", func() {
		ext := rendered("t1")
		Expect(*ext.Spec.Deployment.ExtensionDeployment.Helm.OCIRepository.Ref).To(Equal(registry + "/" + strings.ReplaceAll(chartArtifact, "/", "_") + ":t1"))
		Expect(ext.Spec.Deployment.AdmissionDeployment).To(BeNil())
		Expect(ext.Annotations).To(HaveKeyWithValue("security.gardener.cloud/pod-security-enforce", "privileged"))
		Expect(ext.Spec.Resources).To(ConsistOf(HaveField("Type", "firewall"), HaveField("Type", "acl")))

		By("gardener-operator's CRD accepting it (server-side dry run, then for real)")
		Expect(runtimeC.Create(ctx, ext.DeepCopy(), client.DryRunAll)).To(Succeed())
		Expect(runtimeC.Create(ctx, ext)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(runtimeC.Delete(ctx, ext))).To(Succeed()) })
		got := &operatorv1alpha1.Extension{}
		Expect(runtimeC.Get(ctx, client.ObjectKeyFromObject(ext), got)).To(Succeed())
		Expect(got.Spec.Deployment.ExtensionDeployment.Values).NotTo(BeNil())
	})

	It("gives the chart values it renders with, the local machine provider privileged", func() {
		ext := rendered("t2")
		values := map[string]any{}
		Expect(yaml.Unmarshal(ext.Spec.Deployment.ExtensionDeployment.Values.Raw, &values)).To(Succeed())
		// What push-helm.sh writes into the chart, and what gardenlet adds.
		img := registry + "/" + strings.ReplaceAll(imageArtifact, "/", "_") + ":t2"
		values["image"] = img
		values["gardener"] = map[string]any{"seed": map[string]any{"name": "local"}}

		renderer := chartrenderer.NewWithServerVersion(&version.Info{GitVersion: "v1.34.0", Major: "1", Minor: "34"})
		rc, err := renderer.RenderEmbeddedFS(charts.ChartFS, charts.ChartPath, "gardener-extension-firewall", "extension-firewall-local", values)
		Expect(err).NotTo(HaveOccurred())
		var deployment *appsv1.Deployment
		for _, m := range rc.Manifests {
			if regexp.MustCompile(`(?m)^kind: Deployment$`).MatchString(m.Content) {
				deployment = &appsv1.Deployment{}
				Expect(yaml.UnmarshalStrict([]byte(m.Content), deployment)).To(Succeed())
			}
		}
		Expect(deployment).NotTo(BeNil())
		c := deployment.Spec.Template.Spec.Containers[0]
		Expect(c.Image).To(Equal(img))
		Expect(c.Args).To(ContainElement("--machine-provider=local"))
		Expect(c.SecurityContext).NotTo(BeNil())
		Expect(c.SecurityContext.Privileged).To(Equal(ptr.To(true)))
	})

	It("says what is missing before it builds anything", func() {
		// A PATH with bash and env only: no helm, no yq.
		bin := GinkgoT().TempDir()
		for _, tool := range []string{"bash", "env"} {
			path, err := exec.LookPath(tool)
			Expect(err).NotTo(HaveOccurred())
			Expect(os.Symlink(path, filepath.Join(bin, tool))).To(Succeed())
		}
		out, err := run(testenv.RepoRoot(), filepath.Join(bin, "env"), "-i", "PATH="+bin, "RUNTIME_KUBECONFIG=/nonexistent/kubeconfig", "hack/local-setup.sh", "up")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("/nonexistent/kubeconfig"))
		Expect(out).To(ContainSubstring("helm on PATH"))
	})
})
