package charts_test

import (
	"fmt"

	"github.com/gardener/gardener/pkg/chartrenderer"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/metal-firewall/gardener-extension-firewall/charts"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/csrapprover"
)

// What the policy refuses is tested against a real kube-apiserver in
// test/integration/credentials (the CSR flood).
var _ = Describe("CSR admission policy", func() {
	It("bounds firewall CSRs with an admission policy on seeds from 1.30, as the approver does", func() {
		old := chartrenderer.NewWithServerVersion(&version.Info{GitVersion: "v1.29.9", Major: "1", Minor: "29"})
		rc, err := old.RenderEmbeddedFS(charts.ChartFS, charts.ChartPath, releaseName, namespace, minimalValues())
		Expect(err).NotTo(HaveOccurred())
		Expect(kindsAndNames(decode(rc))).NotTo(ContainElement(HavePrefix("ValidatingAdmissionPolicy")), "no such API before 1.30")

		var policy *admissionregistrationv1.ValidatingAdmissionPolicy
		for _, o := range objects(minimalValues()) {
			if p, ok := o.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok {
				policy = p
			}
		}
		Expect(policy).NotTo(BeNil())
		Expect(policy.Spec.MatchConditions[0].Expression).To(ContainSubstring("'system:serviceaccount:"+namespace+":firewall-boot.'"),
			"the boot ServiceAccounts of this release's namespace")
		Expect(policy.Spec.Validations[0].Expression).To(Equal(fmt.Sprintf("size(object.spec.request) <= %d", csrapprover.MaxRequestBytes)))
	})
})
