package shootsource_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestShootSource(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Firewall agent shoot source")
}
