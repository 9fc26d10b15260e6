package testenv

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestTestEnv(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Test Environment Suite")
}
