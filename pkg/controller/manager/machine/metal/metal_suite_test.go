package metal_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestMetal(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Metal Machine Provider Suite")
}
