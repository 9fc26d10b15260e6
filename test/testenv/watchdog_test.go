package testenv

import (
	"os/exec"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("watchdog", func() {
	// sleeps starts two children named sleep and returns them and what
	// children found before and after.
	sleeps := func() ([]*exec.Cmd, map[int]bool, map[int]bool) {
		before := children("sleep")
		var cmds []*exec.Cmd
		for range 2 {
			cmd := exec.Command("/bin/sleep", "60")
			Expect(cmd.Start()).To(Succeed())
			DeferCleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			cmds = append(cmds, cmd)
		}
		return cmds, before, children("sleep")
	}
	alive := func(cmd *exec.Cmd) func() bool {
		return func() bool {
			var ws syscall.WaitStatus
			pid, _ := syscall.Wait4(cmd.Process.Pid, &ws, syscall.WNOHANG, nil)
			return pid == 0
		}
	}

	It("kills the children it watches when this process's end closes its pipe", func() {
		cmds, before, after := sleeps()
		Expect(after).To(HaveLen(len(before)+2), "children finds the new ones")
		w, err := watch(before, after)
		Expect(err).NotTo(HaveOccurred())
		// What the kernel does to the pipe when this process dies.
		Expect(w.pipe.Close()).To(Succeed())
		for _, cmd := range cmds {
			Eventually(alive(cmd)).WithTimeout(10 * time.Second).Should(BeFalse())
		}
	})

	It("leaves them alone when stopped", func() {
		cmds, before, after := sleeps()
		w, err := watch(before, after)
		Expect(err).NotTo(HaveOccurred())
		w.stop()
		for _, cmd := range cmds {
			Consistently(alive(cmd)).WithTimeout(time.Second).Should(BeTrue())
		}
	})
})
