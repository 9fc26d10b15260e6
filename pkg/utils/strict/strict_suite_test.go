package strict_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestStrict(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Strict Decoder Suite")
}
