package nftables_test

import (
	"fmt"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset/rulesettest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
	"github.com/metal-firewall/gardener-extension-firewall/test/roottest"
)

// newNS creates a uniquely named namespace that is removed after the spec.
func newNS(prefix string) *netns.NS {
	if reason := roottest.SkipReason(); reason != "" {
		Skip(reason)
	}
	ns, err := netns.New(fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), GinkgoParallelProcess()*1000+int(nextID())))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(ns.Delete)
	return ns
}

var id int32

func nextID() int32 { id++; return id }

// policies returns n wide egress items (see rulesettest.Policies).
func policies(n int) *fwv1alpha1.PolicySpec { return rulesettest.Policies(n, true) }

// policiesOfShape returns n egress items; narrow ones allow one /32 (/128) on
// one port each.
func policiesOfShape(n int, wide bool) *fwv1alpha1.PolicySpec { return rulesettest.Policies(n, wide) }
