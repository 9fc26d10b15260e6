package metalapi

import (
	"net/http"
	"sync"
	"time"
)

// faults are what a test makes go wrong on purpose.
type faults struct {
	mu sync.Mutex
	// down drops every connection without an answer.
	down bool
	// garbageOn answers every request with a body that is no JSON.
	garbageOn bool
	// allocateDelay holds back the answer to an allocation that was
	// carried out, as a metal-api does that is slower than its client.
	allocateDelay time.Duration
}

// SetDown makes the metal-api unreachable (true: every connection is
// dropped without an answer) or reachable again.
func (s *Server) SetDown(down bool) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.down = down
}

// SetGarbage makes the metal-api answer every request with 200 and a body
// that is no JSON (true), or answer properly again.
func (s *Server) SetGarbage(on bool) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.garbageOn = on
}

// DelayAllocations makes every allocation wait d after it was carried out
// before it is answered: a client with a shorter timeout gives up on a
// machine the metal-api allocated.
func (s *Server) DelayAllocations(d time.Duration) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.allocateDelay = d
}

func (f *faults) garbage() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.garbageOn
}

func (f *faults) allocationDelay() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.allocateDelay
}

// intercept drops the connection when the metal-api is down.
func (f *faults) intercept(w http.ResponseWriter, _ *http.Request) bool {
	f.mu.Lock()
	down := f.down
	f.mu.Unlock()
	if !down {
		return false
	}
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return true
		}
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	return true
}
