package providerfirewall_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestProviderFirewall(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Provider Firewall Webhook Suite")
}
