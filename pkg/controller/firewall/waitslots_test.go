package firewall

import (
	"context"
	"fmt"
	"time"

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

var _ = Describe("waitSlots, with firewalls that forward by the time their Extension is woken", func() {
	It("wakes the next refused one when a woken reconcile ends without a slot, never more than the free slots", func() {
		keys := make([]types.NamespacedName, 5)
		for i := range keys {
			keys[i] = types.NamespacedName{Namespace: string(rune('a' + i)), Name: "firewall"}
		}
		s := newWaitSlots(1)
		Expect(s.take(keys[0])).To(BeTrue())
		for _, k := range keys[1:] {
			Expect(s.take(k)).To(BeFalse())
		}
		s.release()
		s.settle(keys[0])
		var order []types.NamespacedName
		for range keys[1:] {
			var e types.NamespacedName
			select {
			case ev := <-s.wake:
				e = client.ObjectKeyFromObject(ev.Object)
			default:
				Fail("the queue stalled after " + fmt.Sprint(order))
			}
			Expect(s.wake).To(BeEmpty(), "one woken per free slot")
			order = append(order, e)
			// Its firewall forwards already: the reconcile ends without a slot.
			s.settle(e)
		}
		Expect(order).To(Equal(keys[1:]), "first come first")
		Expect(s.wake).To(BeEmpty())
	})
})

var _ = Describe("work", func() {
	It("lets as many reconciles write at once as the operator's workers, each giving its worker back once", func(ctx SpecContext) {
		a := &actuator{working: make(chan struct{}, 1)}
		done, err := a.work(ctx)
		Expect(err).NotTo(HaveOccurred())

		second := make(chan func())
		go func() {
			defer GinkgoRecover()
			d, err := a.work(ctx)
			Expect(err).NotTo(HaveOccurred())
			second <- d
		}()
		Consistently(second).WithTimeout(200*time.Millisecond).ShouldNot(Receive(), "the one worker writes")
		done()
		done() // the deferred call after the wait's: no second slot freed
		var d func()
		Eventually(second).Should(Receive(&d))
		Expect(a.working).To(HaveLen(1), "the second holds the one slot")
		d()
		Expect(a.working).To(BeEmpty())
	})

	It("gives up its turn when the reconcile's context ends", func(ctx SpecContext) {
		a := &actuator{working: make(chan struct{}, 1)}
		a.working <- struct{}{}
		ended, cancel := context.WithCancel(ctx)
		cancel()
		_, err := a.work(ended)
		Expect(err).To(MatchError(context.Canceled))
	})
})
