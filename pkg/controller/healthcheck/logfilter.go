package healthcheck

import (
	"fmt"
	"sync"

	"github.com/go-logr/logr"
)

// Gardener's health check reconciler logs these on every check of an
// Extension; the one at info level, once per sync period for every unhealthy
// Extension, is what fills a seed's logs while firewalls boot.
const (
	msgUnsuccessful = "Health check for extension resource progressing or unsuccessful"
	msgCheckError   = "Updating HealthCheckCondition for extension resource to ConditionCheckError"
	msgSuccessful   = "Health check for extension resource successful"
	// msgFailed is logged at error level, with a stack trace, by Gardener's
	// ManagedResource check through the global logger on every check of an
	// unhealthy ManagedResource; its error names the object and the state.
	msgFailed = "Health check failed"
	// maxFailures bounds the failures remembered: past it, each logs once more.
	maxFailures = 10000
)

// ChangesOnly returns log with a sink that passes a health check's result
// only when it differs from the last one logged for the same Extension, and
// a failed check's error only the first time; everything else passes as it
// is. It belongs on the process's logger (ctrl.SetLogger): both Gardener's
// health check reconciler (through the manager's logger, derived from it)
// and its ManagedResource check (through the global logger) log there.
func ChangesOnly(log logr.Logger) logr.Logger {
	if log.GetSink() == nil {
		return log
	}
	inner := log.GetSink()
	if cd, ok := inner.(logr.CallDepthLogSink); ok {
		inner = cd.WithCallDepth(1) // this sink's own frame
	}
	return logr.New(&changeSink{inner: inner, last: &sync.Map{}, failures: &failures{seen: map[string]bool{}}})
}

// changeSink remembers the values it was given (the controller's, and the
// reconcile's namespace and name) to tell the Extensions apart.
type changeSink struct {
	inner  logr.LogSink
	values []any
	last   *sync.Map // Extension -> the last result logged
	// failures are the failed checks' errors logged so far.
	failures *failures
}

type failures struct {
	mu   sync.Mutex
	seen map[string]bool
}

// first tells whether key is logged for the first time.
func (f *failures) first(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen[key] {
		return false
	}
	if len(f.seen) >= maxFailures {
		clear(f.seen)
	}
	f.seen[key] = true
	return true
}

// Init does nothing: the inner sink was initialized by its own logger.
func (s *changeSink) Init(logr.RuntimeInfo) {}

// Enabled is true at every level: a successful check, logged at V(1), still
// ends the run of an unhealthy one.
func (s *changeSink) Enabled(int) bool { return true }

func (s *changeSink) Info(level int, msg string, kv ...any) {
	switch msg {
	case msgUnsuccessful, msgCheckError, msgSuccessful:
		key := s.key(kv)
		result := fmt.Sprint(msg, kv)
		if previous, ok := s.last.Swap(key, result); ok && previous == result {
			return
		}
	}
	if s.inner.Enabled(level) {
		s.inner.Info(level, msg, kv...)
	}
}

func (s *changeSink) Error(err error, msg string, kv ...any) {
	if msg == msgFailed && err != nil && !s.failures.first(fmt.Sprint(s.values, kv, err)) {
		return
	}
	s.inner.Error(err, msg, kv...)
}

func (s *changeSink) WithValues(kv ...any) logr.LogSink {
	return &changeSink{inner: s.inner.WithValues(kv...), values: append(s.values[:len(s.values):len(s.values)], kv...), last: s.last, failures: s.failures}
}

func (s *changeSink) WithName(name string) logr.LogSink {
	return &changeSink{inner: s.inner.WithName(name), values: append(s.values[:len(s.values):len(s.values)], "logger", name), last: s.last, failures: s.failures}
}

// key is the controller and the Extension of a check: every check of both
// types reports into the one condition, SystemComponentsHealthy.
func (s *changeSink) key(kv []any) string {
	want := map[string]bool{"controller": true, "namespace": true, "name": true}
	var key []any
	for _, pairs := range [][]any{s.values, kv} {
		for i := 0; i+1 < len(pairs); i += 2 {
			if k, ok := pairs[i].(string); ok && want[k] {
				key = append(key, k, pairs[i+1])
			}
		}
	}
	return fmt.Sprint(key...)
}
