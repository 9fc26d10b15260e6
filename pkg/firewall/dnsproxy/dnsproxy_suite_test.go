package dnsproxy_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestDNSProxy(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "DNS Proxy Suite")
}
