package constants_test

import (
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/gardener/gardener/pkg/component/kubernetes/apiserverexposure"
	gardenerutils "github.com/gardener/gardener/pkg/utils/gardener"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	. "github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
)

// The constants package spells out names that Gardener owns, so that webhooks
// and the admission need not link Gardener's components; these specs keep the
// copies equal to Gardener's.
var _ = Describe("names Gardener owns", func() {
	It("the TLS-termination EnvoyFilter suffix is Gardener's", func() {
		Expect(GardenerTLSTerminationSuffix).To(Equal(apiserverexposure.IstioTLSTerminationEnvoyFilterSuffix))
	})
	It("the shoot access secret carries Gardener's prefix", func() {
		Expect(ShootAccessSecretName).To(Equal(gardenerutils.SecretNamePrefixShootAccess + ShootAccessName))
	})
	It("the ingress namespaces are selected by Gardener's role label", func() {
		Expect(IngressNamespaceLabel).To(Equal(v1beta1constants.GardenRole))
		Expect(IngressNamespaceRole).To(Equal(v1beta1constants.GardenRoleIstioIngress))
	})
})
