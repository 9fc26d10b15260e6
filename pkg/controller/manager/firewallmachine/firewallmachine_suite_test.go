package firewallmachine_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestFirewallMachine(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Firewall Machine Controller Suite")
}
