package lastgood_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestLastGood(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Last good ruleset")
}
