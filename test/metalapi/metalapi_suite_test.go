package metalapi_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestMetalAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Test metal-api Test Server Suite")
}
