package stream

import (
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// The suite is inside the package (receiver is not exported): its Report
// and Receive would clash with Ginkgo's and Gomega's dot imports.
func TestStream(t *testing.T) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	ginkgo.RunSpecs(t, "Lab Stream Suite")
}
