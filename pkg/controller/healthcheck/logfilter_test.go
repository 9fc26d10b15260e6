package healthcheck

import (
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("ChangesOnly", func() {
	var (
		lines []string
		log   logr.Logger
	)
	BeforeEach(func() {
		lines = nil
		log = ChangesOnly(funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{}).WithValues("controller", "healthcheck"))
	})
	// check logs as Gardener's health check reconciler does, for one Extension.
	check := func(name string, status string, details string) {
		l := log.WithValues("namespace", "shoot--p--"+name, "name", "firewall")
		switch status {
		case "True":
			l.V(1).Info(msgSuccessful, "kind", "Extension", "conditionType", "SystemComponentsHealthy")
		default:
			l.Info(msgUnsuccessful, "failed", 0, "progressing", 0, "successful", 0, "details", details)
		}
	}

	It("logs an Extension's unhealthy result once until it changes, and again after it was healthy", func() {
		check("a", "False", "FirewallDeployment firewall does not exist.")
		check("a", "False", "FirewallDeployment firewall does not exist.")
		check("b", "False", "FirewallDeployment firewall does not exist.")
		Expect(lines).To(HaveLen(2), "once per Extension")
		Expect(lines[0]).To(And(ContainSubstring(`"namespace"="shoot--p--a"`), ContainSubstring("does not exist")))

		check("a", "False", "firewall not ready: 0 of 1 firewalls ready.")
		Expect(lines).To(HaveLen(3), "a changed result")
		check("a", "True", "")
		Expect(lines).To(HaveLen(3), "the successful check is at V(1), not enabled here")
		check("a", "False", "firewall not ready: 0 of 1 firewalls ready.")
		Expect(lines).To(HaveLen(4), "unhealthy again after a healthy check")
	})

	It("logs a failed check's error once, each object and state apart", func() {
		mr := log.WithName("healthcheck-managed-resource").WithValues("provider", "acl")
		outdated := func(ns string) error {
			return fmt.Errorf("managed resource \"extension-acl\" in namespace %q is unhealthy: observed generation outdated (0/1)", ns)
		}
		mr.Error(outdated("shoot--p--a"), msgFailed)
		mr.Error(outdated("shoot--p--a"), msgFailed)
		mr.Error(outdated("shoot--p--b"), msgFailed)
		Expect(lines).To(HaveLen(2))
		mr.Error(errors.New(`managed resource "extension-acl" in namespace "shoot--p--a" is unhealthy: condition "ResourcesApplied" has invalid status False`), msgFailed)
		Expect(lines).To(HaveLen(3), "another state")
	})

	It("passes everything else", func() {
		log.Info("Performing healthcheck")
		log.Info("Performing healthcheck")
		log.Error(nil, "Failed to execute healthChecks")
		log.Error(nil, "Failed to execute healthChecks")
		Expect(lines).To(HaveLen(4))
	})
})
