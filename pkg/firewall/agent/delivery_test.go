package agent_test

import (
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/agent"
)

// The shoot's admins can write what the shoot holds: the agent asks it for a
// delivered bootstrap kubeconfig only when its seed refuses it, or has not
// answered for DeliveryAfter, never after an ordinary failed read.
var _ = Describe("When the agent looks for a delivery through the shoot", func() {
	var a *agent.Agent
	down := errors.New(`Get "https://seed:443/apis/...": dial tcp 192.0.2.1:443: connect: connection refused`)
	BeforeEach(func() { a = &agent.Agent{} })

	It("does not after an ordinary failed read, until the seed has not answered for DeliveryAfter", func() {
		Expect(agent.LookForDelivery(a, time.Time{}, down)).To(BeFalse(), "the first failure")
		Expect(agent.LookForDelivery(a, time.Now().Add(-time.Minute), down)).To(BeFalse(), "a minute of failures")
		Expect(agent.LookForDelivery(a, time.Now().Add(-agent.DefaultDeliveryAfter-time.Second), down)).To(BeTrue(), "DefaultDeliveryAfter of failures")

		a.DeliveryAfter = 10 * time.Minute
		Expect(agent.LookForDelivery(a, time.Now().Add(-agent.DefaultDeliveryAfter-time.Second), down)).To(BeFalse(), "the agent's own DeliveryAfter")
		Expect(agent.LookForDelivery(a, time.Now().Add(-11*time.Minute), down)).To(BeTrue())
	})

	DescribeTable("does at once when the seed refuses the agent",
		func(err error) {
			Expect(agent.LookForDelivery(a, time.Time{}, err)).To(BeTrue())
		},
		Entry("403, as a seed that revoked the agent's RBAC after a migration answers",
			apierrors.NewForbidden(schema.GroupResource{Group: "firewall.metal-firewall.io", Resource: "firewalls"}, "fw", errors.New("RBAC"))),
		Entry("401", apierrors.NewUnauthorized("certificate revoked")),
		Entry("an unknown CA, a new seed's", fmt.Errorf("tls: %w", x509.UnknownAuthorityError{})),
	)
})
