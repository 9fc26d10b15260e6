package controlplane_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"

	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

func TestControlPlane(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Test Integration Control Plane Suite")
}

var (
	seed      *testenv.ControlPlane
	seedAdmin kubernetes.Interface
)

var _ = BeforeSuite(func() {
	// CI runs the suites in parallel on two cores: give the real components time.
	SetDefaultEventuallyTimeout(30 * time.Second)
	var err error
	seed, err = testenv.Start(testenv.Options{
		Name:              "seed",
		CRDDirectoryPaths: testenv.SeedCRDPaths(),
		ControllerManager: true,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(seed.Stop()).To(Succeed()) })

	seedAdmin, err = kubernetes.NewForConfig(seed.Config)
	Expect(err).NotTo(HaveOccurred())
})
