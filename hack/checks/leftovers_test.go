package checks_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Other packages' suites run beside this one and start processes of their
// own, so the specs look for what they planted in the check's report, not
// for an empty report.
var _ = Describe("leftovers.sh", func() {
	var tmp, snap string

	script, err := filepath.Abs("../leftovers.sh")
	Expect(err).NotTo(HaveOccurred())

	run := func(wait int, args ...string) (string, error) {
		cmd := exec.Command(script, args...)
		// The folders it looks for are under TMPDIR: this spec's own, not the
		// other suites' /tmp.
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "LEFTOVERS_WAIT="+strconv.Itoa(wait))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// plant starts `sleep seconds` under the name of a process the suites
	// start (its comm is the file's name) and stops it at the spec's end.
	plant := func(name string, seconds int) *exec.Cmd {
		sleep, err := exec.LookPath("sleep")
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		data, err := os.ReadFile(sleep)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		bin := filepath.Join(GinkgoT().TempDir(), name)
		ExpectWithOffset(1, os.WriteFile(bin, data, 0o755)).To(Succeed())
		cmd := exec.Command(bin, strconv.Itoa(seconds))
		ExpectWithOffset(1, cmd.Start()).To(Succeed())
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		DeferCleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		return cmd
	}
	processLine := func(cmd *exec.Cmd, name string) string {
		return fmt.Sprintf("process %d %s ", cmd.Process.Pid, name)
	}

	BeforeEach(func() {
		tmp = GinkgoT().TempDir()
		snap = filepath.Join(GinkgoT().TempDir(), "snapshot")
	})

	It("names a process, a folder and a network namespace that appeared after the snapshot, and fails", func() {
		out, err := run(0, "snapshot", snap)
		Expect(err).NotTo(HaveOccurred(), out)

		agent := plant("firewall-agent", 600)
		folder := filepath.Join(tmp, "ginkgo123")
		Expect(os.Mkdir(folder, 0o755)).To(Succeed())
		ns := ""
		if os.Geteuid() == 0 {
			ns = fmt.Sprintf("leftovers-spec-%d", os.Getpid())
			Expect(exec.Command("ip", "netns", "add", ns).Run()).To(Succeed())
			DeferCleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		}

		out, err = run(1, "check", snap)
		Expect(err).To(HaveOccurred(), "check passed with planted leftovers:\n"+out)
		Expect(out).To(ContainSubstring("the suites left these behind"))
		Expect(out).To(ContainSubstring(processLine(agent, "firewall-agent")))
		Expect(out).To(ContainSubstring("folder " + folder))
		if ns != "" {
			Expect(out).To(ContainSubstring("netns " + ns))
		}
	})

	It("does not name what was there before the snapshot", func() {
		agent := plant("firewall-agent", 600)
		Expect(os.Mkdir(filepath.Join(tmp, "ginkgo456"), 0o755)).To(Succeed())
		out, err := run(0, "snapshot", snap)
		Expect(err).NotTo(HaveOccurred(), out)

		out, _ = run(0, "check", snap)
		Expect(out).NotTo(ContainSubstring(processLine(agent, "firewall-agent")))
		Expect(out).NotTo(ContainSubstring("ginkgo456"))
	})

	It("waits for a process that is going away", func() {
		out, err := run(0, "snapshot", snap)
		Expect(err).NotTo(HaveOccurred(), out)
		// Still there when the check starts, gone two seconds later.
		probe := plant("labprobe", 2)

		out, _ = run(10, "check", snap)
		Expect(out).NotTo(ContainSubstring(processLine(probe, "labprobe")))
	})

	It("refuses an unknown command", func() {
		out, err := run(0, "inspect", snap)
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("usage:"))
	})
})
