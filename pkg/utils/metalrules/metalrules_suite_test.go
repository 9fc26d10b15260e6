package metalrules_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestMetalRules(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Metal Rules Suite")
}
