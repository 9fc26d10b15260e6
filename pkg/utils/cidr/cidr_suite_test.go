package cidr_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestCIDR(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "CIDR Suite")
}
