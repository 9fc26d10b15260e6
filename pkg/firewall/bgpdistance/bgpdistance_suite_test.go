package bgpdistance_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestBGPDistance(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "BGP distance Suite")
}
