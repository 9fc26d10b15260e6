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
type waitSlots struct {
	mu      sync.Mutex
	free    int
	refused []types.NamespacedName
	// wake carries the refused Extensions to the controller, first come first.
	wake chan event.GenericEvent
}

func newWaitSlots(n int) *waitSlots {
	return &waitSlots{free: n, wake: make(chan event.GenericEvent, n)}
}

// take takes a slot for key's wait, or queues key for the next free one.
func (s *waitSlots) take(key types.NamespacedName) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
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
	if len(s.refused) == 0 {
		return
	}
	key := s.refused[0]
	s.refused = s.refused[1:]
	ex := &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	select {
	case s.wake <- event.GenericEvent{Object: ex}:
	default:
		// The controller is behind by a whole channel of wake-ups: this one
		// comes with the controller's resync instead.
	}
}
