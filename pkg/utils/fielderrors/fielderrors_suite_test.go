package fielderrors_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestFieldErrors(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Field Errors Suite")
}
