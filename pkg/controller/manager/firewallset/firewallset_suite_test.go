package firewallset_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestFirewallSet(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "FirewallSet Controller Suite")
}
