package istio_test

import (
	"testing"

	"github.com/gardener/gardener/pkg/features"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	istiolog "istio.io/istio/pkg/log"
)

// suiteT is the suite's testing.T, for Istio's simulation, which takes nothing else.
var suiteT *testing.T

func TestIstio(t *testing.T) {
	suiteT = t
	RegisterFailHandler(Fail)
	RunSpecs(t, "ACL on Istio's Config Generation Suite")
}

var _ = BeforeSuite(func() {
	// istiod's config generation logs every push; the specs say what matters.
	for _, scope := range istiolog.Scopes() {
		scope.SetOutputLevel(istiolog.NoneLevel)
	}
	// Gardener's components read their feature gates, as gardenlet registers them (v1.150 defaults:
	// IstioTLSTermination on, the legacy HTTP proxy port kept).
	Expect(features.DefaultFeatureGate.Add(features.GetFeatures(features.IstioTLSTermination, features.RemoveHTTPProxyLegacyPort))).To(Succeed())
})
