package testenv

import (
	"path/filepath"
	"runtime"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The main goroutine keeps the main thread, which Go never ends, so that
// the spec's starting thread below is one that ends.
func init() { runtime.LockOSThread() }

var _ = Describe("StartProcess", func() {
	// A child must outlive the thread it was started from: Go ends a locked
	// thread with its goroutine (netns.NS.Do does so), and the kernel sends
	// Pdeathsig when the forking thread ends.
	It("keeps the child alive after the thread that started it ends", func() {
		log := filepath.Join(GinkgoT().TempDir(), "log")
		type started struct {
			p   *Process
			err error
		}
		done := make(chan started, 1)
		go func() {
			// This thread ends with the goroutine.
			runtime.LockOSThread()
			p, err := StartProcess("/bin/sleep", log, nil, "60")
			done <- started{p, err}
		}()
		s := <-done
		Expect(s.err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = s.p.Stop() })
		Consistently(s.p.done).WithTimeout(time.Second).ShouldNot(Receive(), "the child died with the thread that started it")
	})
})
