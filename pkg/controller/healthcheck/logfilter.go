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
)

// changesOnly returns log with a sink that passes a health check's result
// only when it differs from the last one logged for the same Extension and
// condition; everything else passes as it is.
func changesOnly(log logr.Logger) logr.Logger {
	if log.GetSink() == nil {
		return log
	}
	inner := log.GetSink()
	if cd, ok := inner.(logr.CallDepthLogSink); ok {
		inner = cd.WithCallDepth(1) // this sink's own frame
	}
	return logr.New(&changeSink{inner: inner, last: &sync.Map{}})
}

// changeSink remembers the values it was given (the controller's, and the
// reconcile's namespace and name) to tell the Extensions apart.
type changeSink struct {
	inner  logr.LogSink
	values []any
	last   *sync.Map // Extension and condition -> the last result logged
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

func (s *changeSink) Error(err error, msg string, kv ...any) { s.inner.Error(err, msg, kv...) }

func (s *changeSink) WithValues(kv ...any) logr.LogSink {
	return &changeSink{inner: s.inner.WithValues(kv...), values: append(s.values[:len(s.values):len(s.values)], kv...), last: s.last}
}

func (s *changeSink) WithName(name string) logr.LogSink {
	return &changeSink{inner: s.inner.WithName(name), values: s.values, last: s.last}
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
