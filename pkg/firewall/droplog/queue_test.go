package droplog_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/droplog"
)

var _ = Describe("Queue", func() {
	It("holds at most its size, counts what it refused and hands the count to the next Take", func() {
		q := droplog.NewQueue(3)
		for i := range 5 {
			ok := q.Push(droplog.Event{Length: i})
			Expect(ok).To(Equal(i < 3), "push %d", i)
		}
		Expect(q.Len()).To(Equal(3))
		events, lost := q.Take(2)
		Expect(events).To(HaveLen(2))
		Expect(events[0].Length).To(Equal(0))
		Expect(lost).To(Equal(uint64(2)))
		q.Lose(7)
		events, lost = q.Take(10)
		Expect(events).To(HaveLen(1))
		Expect(events[0].Length).To(Equal(2))
		Expect(lost).To(Equal(uint64(7)))
		_, lost = q.Take(10)
		Expect(lost).To(BeZero())
	})
})
