package firewall

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("waitSlots", func() {
	woken := func(s *waitSlots) []types.NamespacedName {
		var out []types.NamespacedName
		for {
			select {
			case e := <-s.wake:
				out = append(out, client.ObjectKeyFromObject(e.Object))
			default:
				return out
			}
		}
	}
	a, b, c := types.NamespacedName{Namespace: "a", Name: "firewall"}, types.NamespacedName{Namespace: "b", Name: "firewall"}, types.NamespacedName{Namespace: "c", Name: "firewall"}

	It("gives out as many slots as it has and wakes the refused, first come first, once each", func() {
		s := newWaitSlots(1)
		Expect(s.take(a)).To(BeTrue())
		Expect(s.take(b)).To(BeFalse())
		Expect(s.take(c)).To(BeFalse())
		Expect(s.take(b)).To(BeFalse(), "refused again: still queued once")
		Expect(woken(s)).To(BeEmpty())

		s.release()
		Expect(woken(s)).To(Equal([]types.NamespacedName{b}))
		Expect(s.take(b)).To(BeTrue(), "the freed slot")
		s.release()
		Expect(woken(s)).To(Equal([]types.NamespacedName{c}))
		s.release()
		Expect(woken(s)).To(BeEmpty(), "no one left to wake")
	})
})
