package testenv

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// The main goroutine keeps the main thread, which Go never ends, so that
// the test's starting thread below is one that ends.
func init() { runtime.LockOSThread() }

// A child must outlive the thread it was started from: Go ends a locked
// thread with its goroutine (netns.NS.Do does so), and the kernel sends
// Pdeathsig when the forking thread ends.
func TestChildOutlivesTheStartingThread(t *testing.T) {
	started := make(chan *process, 1)
	go func() {
		// This thread ends with the goroutine.
		runtime.LockOSThread()
		p, err := startProcess("/bin/sleep", filepath.Join(t.TempDir(), "log"), "60")
		if err != nil {
			t.Error(err)
		}
		started <- p
	}()
	p := <-started
	if p == nil {
		return
	}
	select {
	case err := <-p.done:
		t.Fatalf("the child died with the thread that started it: %v", err)
	case <-time.After(time.Second):
		_ = p.stop()
	}
}
