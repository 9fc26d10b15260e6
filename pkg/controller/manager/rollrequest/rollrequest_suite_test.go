package rollrequest_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestRollRequest(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Roll Request Suite")
}
