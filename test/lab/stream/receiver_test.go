package stream

import (
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

var _ = ginkgo.Describe("receiver", func() {
	ginkgo.It("says where the lost packets were, once later ones passed the reorder window", func() {
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		c := newReceiver(start)
		lost := map[uint64]bool{300: true, 301: true, 302: true, 700: true, 1190: true}
		// The first 500 through one firewall, the rest through the other;
		// each pair of neighbours swapped, as flows over two paths arrive.
		for seq := uint64(1); seq <= 1200; seq += 2 {
			for _, s := range []uint64{seq + 1, seq} {
				if lost[s] {
					continue
				}
				ttl := 100
				if s > 500 {
					ttl = 101
				}
				c.add(s, ttl, start.Add(time.Duration(s)*5*time.Millisecond))
			}
		}
		gomega.Expect(c.add(10, 100, start)).To(gomega.BeFalse(), "a duplicate")
		c.scan()
		gomega.Expect(c.r.LostRanges).To(gomega.Equal([]LostRange{{From: 300, To: 302}, {From: 700, To: 700}}),
			"1190 is within the reorder window of the highest")
		gomega.Expect(c.r.Lost()).To(gomega.Equal(5))
		gomega.Expect(c.r.Duplicates).To(gomega.Equal(1))
		gomega.Expect(c.r.Carriers).To(gomega.HaveLen(2))
		gomega.Expect(c.r.SwitchLog).NotTo(gomega.BeEmpty())
		gomega.Expect(c.r.SwitchLog[0].Seq).To(gomega.BeNumerically("~", 501, 1))

		ginkgo.By("scanning again adds nothing twice")
		c.scan()
		gomega.Expect(c.r.LostRanges).To(gomega.HaveLen(2))
	})
})
