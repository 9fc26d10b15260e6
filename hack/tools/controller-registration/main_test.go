package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing/fstest"
	"time"

	gardencoreinstall "github.com/gardener/gardener/pkg/apis/core/install"
	gardencorev1 "github.com/gardener/gardener/pkg/apis/core/v1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	"github.com/gardener/gardener/pkg/chartrenderer"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/version"

	"github.com/metal-firewall/gardener-extension-firewall/charts"
)

// committed are the generated files as committed, read from the repository.
func committed(name string) []byte {
	raw, err := os.ReadFile("../../../example/" + name)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return raw
}

// decodeAll decodes a YAML stream strictly with the scheme.
func decodeAll(scheme *runtime.Scheme, raw []byte) []runtime.Object {
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	var out []runtime.Object
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		if strings.TrimSpace(strings.TrimPrefix(doc, "---")) == "" || !strings.Contains(doc, "kind:") {
			continue
		}
		obj, _, err := decoder.Decode([]byte(doc), nil, nil)
		ExpectWithOffset(1, err).NotTo(HaveOccurred(), doc)
		out = append(out, obj)
	}
	return out
}

func coreScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	gardencoreinstall.Install(s)
	return s
}

// chartFiles are the chart's files by their name inside the archive.
func chartFiles(fsys fs.FS) map[string]string {
	out := map[string]string{}
	ExpectWithOffset(1, fs.WalkDir(fsys, charts.ChartPath, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		out[p] = string(data)
		return err
	})).To(Succeed())
	return out
}

var _ = Describe("example/controller-registration.yaml", func() {
	var (
		deployment   *gardencorev1.ControllerDeployment
		registration *gardencorev1beta1.ControllerRegistration
	)
	BeforeEach(func() {
		objs := decodeAll(coreScheme(), committed("controller-registration.yaml"))
		Expect(objs).To(HaveLen(2))
		var ok bool
		deployment, ok = objs[0].(*gardencorev1.ControllerDeployment)
		Expect(ok).To(BeTrue(), "first a core.gardener.cloud/v1 ControllerDeployment, got %T", objs[0])
		registration, ok = objs[1].(*gardencorev1beta1.ControllerRegistration)
		Expect(ok).To(BeTrue(), "then a ControllerRegistration, got %T", objs[1])
	})

	It("is what make generate writes from the chart as it is (else: run make generate)", func() {
		files, err := Generate(charts.ChartFS, charts.ChartPath)
		Expect(err).NotTo(HaveOccurred())
		Expect(files).To(HaveLen(2))
		for name, content := range files {
			Expect(string(committed(name))).To(Equal(string(content)), "example/%s is stale: run make generate", name)
		}
	})

	It("carries exactly the chart's files, in a deterministic archive", func() {
		gz, err := gzip.NewReader(bytes.NewReader(deployment.Helm.RawChart))
		Expect(err).NotTo(HaveOccurred())
		Expect(gz.Name).To(BeEmpty())
		Expect(gz.ModTime.IsZero()).To(BeTrue())
		tr := tar.NewReader(gz)
		got := map[string]string{}
		var names []string
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			Expect(err).NotTo(HaveOccurred())
			Expect(h.ModTime.Unix()).To(BeZero(), h.Name)
			Expect(h.Uid).To(BeZero(), h.Name)
			Expect(h.Gid).To(BeZero(), h.Name)
			Expect(h.Uname).To(BeEmpty(), h.Name)
			Expect(h.Mode).To(BeEquivalentTo(0o644), h.Name)
			data, err := io.ReadAll(tr)
			Expect(err).NotTo(HaveOccurred())
			got[h.Name] = string(data)
			names = append(names, h.Name)
		}
		Expect(slices.IsSorted(names)).To(BeTrue(), "entries are sorted: %v", names)
		Expect(got).To(Equal(chartFiles(charts.ChartFS)), "run make generate")
		Expect(got).To(HaveKey(charts.ChartPath + "/templates/_helpers.tpl"))
	})

	It("renders as gardenlet renders it", func() {
		renderer := chartrenderer.NewWithServerVersion(&version.Info{GitVersion: "v1.34.0", Major: "1", Minor: "34"})
		values := map[string]any{
			// what an operator adds (docs/operations/registration.md) and what gardenlet injects
			"seedAPIServer": map[string]any{"url": "https://api.seed-a.example.com"},
			"gardener":      map[string]any{"version": "v1.150.0", "seed": map[string]any{"name": "seed-a", "provider": "metal"}},
		}
		Expect(deployment.Helm.Values).To(BeNil(), "the registration sets no values; seedAPIServer is the operator's")
		rc, err := renderer.RenderArchive(deployment.Helm.RawChart, Name, "extension-firewall-x7k2p", values)
		Expect(err).NotTo(HaveOccurred())
		Expect(rc.ChartName).To(Equal(charts.ChartPath))
		var kinds []string
		for _, m := range rc.Manifests {
			kinds = append(kinds, m.Head.Kind+"/"+m.Head.Metadata.Name)
		}
		Expect(kinds).To(ContainElements(
			"Deployment/gardener-extension-firewall",
			"ClusterRole/gardener-extension-firewall",
			"CustomResourceDefinition/firewalls.firewall.metal-firewall.io",
		))
		Expect(rc.FileContent("deployment.yaml")).To(ContainSubstring("--seed-server=https://api.seed-a.example.com"))

		_, err = renderer.RenderArchive(deployment.Helm.RawChart, Name, "extension-firewall-x7k2p", map[string]any{})
		Expect(err).To(MatchError(ContainSubstring("seedAPIServer.url")), "without the operator's value gardenlet reports what is missing")
	})

	It("registers both types with their lifecycles, deployed on demand by this ControllerDeployment", func() {
		Expect(registration.Name).To(Equal(deployment.Name))
		Expect(registration.Spec.Deployment.DeploymentRefs).To(ConsistOf(gardencorev1beta1.DeploymentRef{Name: deployment.Name}))
		Expect(*registration.Spec.Deployment.Policy).To(Equal(gardencorev1beta1.ControllerDeploymentPolicyOnDemand))
		before, after := gardencorev1beta1.BeforeKubeAPIServer, gardencorev1beta1.AfterKubeAPIServer
		Expect(registration.Spec.Resources).To(ConsistOf(
			And(HaveField("Kind", "Extension"), HaveField("Type", "firewall"),
				HaveField("Lifecycle", Equal(&gardencorev1beta1.ControllerResourceLifecycle{Reconcile: &after, Delete: &before, Migrate: &before})),
				HaveField("ReconcileTimeout", Equal(&metav1.Duration{Duration: 16 * time.Minute})),
				HaveField("WorkerlessSupported", HaveValue(BeFalse()))),
			And(HaveField("Kind", "Extension"), HaveField("Type", "acl"),
				HaveField("Lifecycle", Equal(&gardencorev1beta1.ControllerResourceLifecycle{Reconcile: &before, Delete: &after, Migrate: &after})),
				HaveField("ReconcileTimeout", BeNil()),
				HaveField("WorkerlessSupported", HaveValue(BeTrue()))),
		))
	})

	It("would be found stale after a change of the chart", func() {
		changed := fstest.MapFS{}
		for name, content := range chartFiles(charts.ChartFS) {
			changed[name] = &fstest.MapFile{Data: []byte(content)}
		}
		values := changed[charts.ChartPath+"/values.yaml"]
		values.Data = append(values.Data, []byte("\n# a change\n")...)
		files, err := Generate(changed, charts.ChartPath)
		Expect(err).NotTo(HaveOccurred())
		Expect(files["controller-registration.yaml"]).NotTo(Equal(committed("controller-registration.yaml")))
		Expect(files["extension.yaml"]).To(Equal(committed("extension.yaml")), "the OCI reference names the chart's version only")
	})
})

var _ = Describe("example/extension.yaml", func() {
	It("is gardener-operator's Extension with the same registration and values, the chart by its version", func() {
		s := runtime.NewScheme()
		Expect(operatorv1alpha1.AddToScheme(s)).To(Succeed())
		objs := decodeAll(s, committed("extension.yaml"))
		Expect(objs).To(HaveLen(1))
		ext, ok := objs[0].(*operatorv1alpha1.Extension)
		Expect(ok).To(BeTrue(), "got %T", objs[0])

		registration := decodeAll(coreScheme(), committed("controller-registration.yaml"))[1].(*gardencorev1beta1.ControllerRegistration)
		Expect(ext.Name).To(Equal(registration.Name))
		Expect(ext.Spec.Resources).To(Equal(registration.Spec.Resources))
		d := ext.Spec.Deployment.ExtensionDeployment
		Expect(d.Values).To(BeNil())
		Expect(*d.Policy).To(Equal(*registration.Spec.Deployment.Policy))
		Expect(*d.Helm.OCIRepository.Ref).To(HaveSuffix("/" + charts.ChartPath + ":" + chartVersion()))
	})
})

func chartVersion() string {
	raw, err := charts.ChartFS.ReadFile(charts.ChartPath + "/Chart.yaml")
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "version: "); ok {
			return v
		}
	}
	Fail("Chart.yaml has no version")
	return ""
}
