package fqdn_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestFQDN(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "FQDN Selector Suite")
}
