package firewalldeployment_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestFirewallDeployment(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "FirewallDeployment Webhook Suite")
}
