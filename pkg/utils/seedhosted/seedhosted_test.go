package seedhosted_test

import (
	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/seedhosted"
)

var _ = Describe("Check", func() {
	cluster := func(seed *gardencorev1beta1.Seed, workers ...gardencorev1beta1.Worker) *extensionscontroller.Cluster {
		return &extensionscontroller.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "shoot--p--a"}, Seed: seed,
			Shoot: &gardencorev1beta1.Shoot{Spec: gardencorev1beta1.ShootSpec{Provider: gardencorev1beta1.Provider{Workers: workers}}}}
	}

	It("passes a Cluster with a seed", func() {
		Expect(seedhosted.Check(cluster(&gardencorev1beta1.Seed{}), "x")).To(Succeed())
	})

	It("names a self-hosted shoot, says what the type needs, and codes a configuration problem", func() {
		err := seedhosted.Check(cluster(nil, gardencorev1beta1.Worker{Name: "cp", ControlPlane: &gardencorev1beta1.WorkerControlPlane{}}), "the acl needs the seed's gateway")
		Expect(err).To(MatchError("cluster shoot--p--a is of a self-hosted shoot (a worker pool runs its control plane) and names no seed: the acl needs the seed's gateway"))
		Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
	})

	It("refuses any Cluster without a seed", func() {
		Expect(seedhosted.Check(cluster(nil), "x")).To(MatchError("cluster shoot--p--a names no seed: x"))
	})
})
