package droplog

import "sync"

// Batch is what the agent sends to the receiver in one request.
type Batch struct {
	// Firewall is the firewall's name.
	Firewall string `json:"firewall"`
	// Lost counts the events that were not delivered since the previous
	// batch: the queue was full, the kernel's socket overran, or a batch
	// could not be sent.
	Lost   uint64  `json:"lost,omitempty"`
	Events []Event `json:"events"`
}

// Queue holds the events waiting to be sent, at most Max. Events that find
// it full are not kept but counted, and the count goes with the next batch
// taken. Safe for concurrent use.
type Queue struct {
	mu     sync.Mutex
	events []Event
	max    int
	lost   uint64
	// ready is signalled (without blocking) when an event arrives.
	ready chan struct{}
}

// NewQueue returns a queue of at most max events.
func NewQueue(max int) *Queue {
	if max < 1 {
		max = 1
	}
	return &Queue{max: max, ready: make(chan struct{}, 1)}
}

// Push adds an event; false when the queue was full and the event is lost.
func (q *Queue) Push(e Event) bool {
	q.mu.Lock()
	full := len(q.events) >= q.max
	if full {
		q.lost++
	} else {
		q.events = append(q.events, e)
	}
	q.mu.Unlock()
	if full {
		return false
	}
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// Lose counts n events lost outside the queue (the kernel's socket overran,
// a batch was not delivered).
func (q *Queue) Lose(n uint64) {
	q.mu.Lock()
	q.lost += n
	q.mu.Unlock()
}

// Take removes up to n events, oldest first, and the count of events lost
// since the last Take.
func (q *Queue) Take(n int) ([]Event, uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n = min(n, len(q.events))
	out := make([]Event, n)
	copy(out, q.events[:n])
	// Shift rather than reslice, so the backing array never grows past max.
	rest := copy(q.events, q.events[n:])
	clear(q.events[rest:])
	q.events = q.events[:rest]
	lost := q.lost
	q.lost = 0
	return out, lost
}

// Len is the number of events waiting.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.events)
}

// Ready is signalled when an event arrives.
func (q *Queue) Ready() <-chan struct{} { return q.ready }
