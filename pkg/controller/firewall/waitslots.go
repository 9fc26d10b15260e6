package firewall

import (
	"slices"
	"sync"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// waitSlots bound the reconciles that wait for their firewall at once: each
// runs on a worker of its own (see AddToManagerWithOptions), so that booting
// firewalls never hold the workers that reconcile other shoots' changes.
// An Extension refused a slot is queued and reconciled again as soon as a
// slot frees: Gardener's generic reconciler ignores a RequeueAfterError's
// interval (it requeues after its resync), so the wake-up is this one's.
// A woken Extension whose firewall forwards by then takes no slot; its
// reconcile's end (settle) wakes the next one, so the queue never stalls
// behind free slots.
type waitSlots struct {
	mu      sync.Mutex
	free    int
	refused []types.NamespacedName
	// woken are the Extensions woken whose reconcile has not yet taken a
	// slot or ended: at most free of them at once.
	woken map[types.NamespacedName]bool
	// wake carries the refused Extensions to the controller, first come first.
	wake chan event.GenericEvent
}

func newWaitSlots(n int) *waitSlots {
	return &waitSlots{free: n, woken: map[types.NamespacedName]bool{}, wake: make(chan event.GenericEvent, n)}
}

// take takes a slot for key's wait, or queues key for the next free one.
func (s *waitSlots) take(key types.NamespacedName) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.woken, key)
	if s.free > 0 {
		s.free--
		return true
	}
	if !slices.Contains(s.refused, key) {
		s.refused = append(s.refused, key)
	}
	return false
}

// release frees a slot and wakes the Extension refused first.
func (s *waitSlots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free++
	s.wakeLocked()
}

// settle ends key's reconcile, with or without a wait: a woken Extension
// that needed no slot hands its turn to the next refused one.
func (s *waitSlots) settle(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.woken, key)
	s.wakeLocked()
}

// wakeLocked wakes refused Extensions, first come first, while free slots
// outnumber the woken ones.
func (s *waitSlots) wakeLocked() {
	for len(s.refused) > 0 && s.free > len(s.woken) {
		key := s.refused[0]
		ex := &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		select {
		case s.wake <- event.GenericEvent{Object: ex}:
			s.refused = s.refused[1:]
			s.woken[key] = true
		default:
			// The controller is behind by a whole channel of wake-ups: the
			// next release or settle tries again.
			return
		}
	}
}
