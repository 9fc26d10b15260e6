package charts_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/metal-firewall/gardener-extension-firewall/charts"
)

// generatedCRDs is where controller-gen writes the seed CRDs (make generate).
const generatedCRDs = "../pkg/apis/firewall/crds/seed"

var _ = Describe("Seed CRDs", func() {
	It("are the generated ones, copied by make generate", func() {
		files, err := filepath.Glob(filepath.Join(generatedCRDs, "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(files).To(HaveLen(3))
		entries, err := charts.ChartFS.ReadDir(charts.ChartPath + "/seed-crds")
		Expect(err).NotTo(HaveOccurred())
		Expect(entries).To(HaveLen(len(files)), "run make generate")
		for _, f := range files {
			want, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			got, err := charts.ChartFS.ReadFile(charts.ChartPath + "/seed-crds/" + filepath.Base(f))
			Expect(err).NotTo(HaveOccurred(), "run make generate")
			Expect(string(got)).To(Equal(string(want)), "%s is stale: run make generate", filepath.Base(f))
		}
	})

	It("render unchanged but for the annotations that keep them when the chart goes", func() {
		objs := objects(minimalValues())
		files, err := filepath.Glob(filepath.Join(generatedCRDs, "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		for _, f := range files {
			raw, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			obj, _, err := strict.Decode(raw, nil, nil)
			Expect(err).NotTo(HaveOccurred())
			want := obj.(*apiextensionsv1.CustomResourceDefinition)

			got := find[*apiextensionsv1.CustomResourceDefinition](objs, want.Name)
			Expect(got).NotTo(BeNil(), want.Name)
			Expect(got.Annotations).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"))
			Expect(got.Annotations).To(HaveKeyWithValue("resources.gardener.cloud/keep-object", "true"))
			Expect(equality.Semantic.DeepEqual(got.Spec, want.Spec)).To(BeTrue(), "%s: spec changed in rendering", want.Name)
			for k, v := range want.Annotations {
				Expect(got.Annotations).To(HaveKeyWithValue(k, v))
			}
		}
	})
})
