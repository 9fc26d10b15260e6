package metalsource_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestMetalSource(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Agent Metal Source Suite")
}
