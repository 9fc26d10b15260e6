package seedhosted_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestSeedHosted(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "SeedHosted Suite")
}
