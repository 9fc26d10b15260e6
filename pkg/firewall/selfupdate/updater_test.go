package selfupdate_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/selfupdate"
)

// newUpdater is an updater of an agent v1.0.0 installed in dir whose
// re-exec and watchdog are recorded, not run.
func newUpdater(dir string, key ed25519.PublicKey) *selfupdate.Updater {
	exe := filepath.Join(dir, "firewall-agent")
	if _, err := os.Stat(exe); err != nil {
		Expect(os.WriteFile(exe, []byte("old binary"), 0o755)).To(Succeed())
	}
	return &selfupdate.Updater{Version: "v1.0.0", Executable: exe, Args: []string{"--config", "/etc/x"}, Key: key,
		StatePath: filepath.Join(dir, "state.json"), HealthTimeout: time.Minute, Log: slog.New(slog.NewTextHandler(GinkgoWriter, nil)),
		StartWatchdog: func(string, *selfupdate.State) (int, error) { return 0, nil },
		Exec:          func(string, []string, []string) error { return errors.New("not in a test") }}
}

func readState(path string) *selfupdate.State {
	st, err := selfupdate.ReadState(path)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, st).NotTo(BeNil())
	return st
}

var _ = Describe("the update's state machine", func() {
	var (
		dir  string
		srv  *releaseServer
		pub  ed25519.PublicKey
		priv ed25519.PrivateKey
		rel  selfupdate.Release
	)
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		srv = newReleaseServer()
		pub, priv = newKey()
		rel = publish(srv, priv, "agent", "v1.1.0", []byte("new binary"))
	})
	exe := func() string { return filepath.Join(dir, "firewall-agent") }

	It("is Disabled, with the reason, without a key, and downloads nothing", func() {
		u := newUpdater(dir, nil)
		u.DisabledReason = "no update public key is configured"
		u.Start()
		u.Offer(context.Background(), &rel)
		Expect(u.Status()).To(HaveField("State", selfupdate.StateDisabled))
		Expect(u.Status().Message).To(Equal("no update public key is configured"))
		Expect(u.Switch()).To(Succeed())
		Expect(exe() + selfupdate.StagedSuffix).NotTo(BeAnExistingFile())
	})

	It("is UpToDate on its own version or when no version is named", func() {
		u := newUpdater(dir, pub)
		u.Start()
		u.Offer(context.Background(), &selfupdate.Release{Version: "v1.0.0"})
		Expect(u.Status().State).To(Equal(selfupdate.StateUpToDate))
		u.Offer(context.Background(), nil)
		Expect(u.Status()).To(HaveField("Message", "the source names no agent version"))
	})

	It("records the trial and re-executes the staged binary with the agent's arguments; a failed exec rolls back", func() {
		var execPath string
		var execArgs []string
		u := fetch(dir, pub, rel, func(u *selfupdate.Updater) {
			u.Exec = func(path string, argv, _ []string) error {
				execPath, execArgs = path, argv
				st := readState(filepath.Join(dir, "state.json"))
				Expect(st.Phase).To(Equal(selfupdate.PhaseTrying), "recorded before the exec")
				Expect(st.Deadline.Sub(st.Since)).To(Equal(time.Minute))
				return errors.New("exec format error")
			}
		})
		Expect(u.Switch()).To(MatchError(ContainSubstring("exec format error")))
		Expect(execPath).To(Equal(exe() + selfupdate.StagedSuffix))
		Expect(execArgs).To(Equal([]string{execPath, "--config", "/etc/x"}))
		st := readState(filepath.Join(dir, "state.json"))
		Expect(st.Phase).To(Equal(selfupdate.PhaseFailed))
		Expect(u.Status()).To(HaveField("State", selfupdate.StateRolledBack))
		Expect(exe() + selfupdate.StagedSuffix).NotTo(BeAnExistingFile())
		Expect(os.ReadFile(exe())).To(Equal([]byte("old binary")), "the installed binary is untouched")

		By("not trying the same release again")
		u.Offer(context.Background(), &rel)
		Expect(u.Status()).To(HaveField("State", selfupdate.StateRolledBack))
		Expect(u.Switch()).To(Succeed(), "nothing staged")
	})

	It("on trial, installs itself after its first apply and keeps the old binary as .previous", func() {
		Expect(os.WriteFile(exe()+selfupdate.StagedSuffix, []byte("new binary"), 0o755)).To(Succeed())
		now := time.Now()
		Expect(selfupdate.WriteState(filepath.Join(dir, "state.json"), &selfupdate.State{Phase: selfupdate.PhaseTrying, Version: "v1.1.0",
			From: "v1.0.0", Executable: exe(), Staged: exe() + selfupdate.StagedSuffix, PID: os.Getpid(), Since: now, Deadline: now.Add(time.Minute)})).To(Succeed())
		u := newUpdater(dir, pub)
		u.Version = "v1.1.0"
		u.Executable = exe() + selfupdate.StagedSuffix
		u.Start()
		Expect(u.Status().State).To(Equal(selfupdate.StateUpdating))

		u.Applied()
		Expect(os.ReadFile(exe())).To(Equal([]byte("new binary")))
		Expect(os.ReadFile(exe() + selfupdate.PreviousSuffix)).To(Equal([]byte("old binary")))
		Expect(exe() + selfupdate.StagedSuffix).NotTo(BeAnExistingFile())
		Expect(readState(filepath.Join(dir, "state.json")).Phase).To(Equal(selfupdate.PhaseHealthy))
		Expect(u.Status()).To(HaveField("State", selfupdate.StateUpToDate))
		Expect(u.Executable).To(Equal(exe()), "a later update replaces the installed path")
		info, err := os.Stat(filepath.Join(dir, "state.json"))
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))
	})

	It("on trial past its deadline without a watchdog: rolls itself back into the installed binary", func() {
		Expect(os.WriteFile(exe()+selfupdate.StagedSuffix, []byte("new binary"), 0o755)).To(Succeed())
		since := time.Now().Add(-time.Minute)
		Expect(selfupdate.WriteState(filepath.Join(dir, "state.json"), &selfupdate.State{Phase: selfupdate.PhaseTrying, Version: "v1.1.0",
			From: "v1.0.0", Executable: exe(), Staged: exe() + selfupdate.StagedSuffix, Args: []string{"--config", "c"}, PID: os.Getpid(),
			Since: since, Deadline: since.Add(50 * time.Second)})).To(Succeed())
		execd := make(chan []string, 1)
		u := newUpdater(dir, pub)
		u.Version = "v1.1.0"
		u.Exec = func(_ string, argv, _ []string) error { execd <- argv; return errors.New("recorded") }
		u.Start()
		Eventually(execd).WithTimeout(10 * time.Second).Should(Receive(Equal([]string{exe(), "--config", "c"})))
		st := readState(filepath.Join(dir, "state.json"))
		Expect(st.Phase).To(Equal(selfupdate.PhaseFailed))
		Expect(st.Message).To(ContainSubstring("the watchdog did not act"))
		Expect(u.Status().State).To(Equal(selfupdate.StateRolledBack))
		Expect(exe() + selfupdate.StagedSuffix).NotTo(BeAnExistingFile())
		u.Applied()
		Expect(os.ReadFile(exe())).To(Equal([]byte("old binary")), "a late apply installs nothing")
	})

	It("started as the old version while a trial was on: reports the rollback and does not try that release again", func() {
		Expect(os.WriteFile(exe()+selfupdate.StagedSuffix, []byte("new binary"), 0o755)).To(Succeed())
		Expect(selfupdate.WriteState(filepath.Join(dir, "state.json"), &selfupdate.State{Phase: selfupdate.PhaseTrying, Version: rel.Version,
			SHA256: rel.SHA256, From: "v1.0.0", Executable: exe(), Staged: exe() + selfupdate.StagedSuffix, PID: os.Getpid()})).To(Succeed())
		u := newUpdater(dir, pub)
		u.Start()
		Expect(u.Status().State).To(Equal(selfupdate.StateRolledBack))
		Expect(u.Status().Message).To(ContainSubstring("v1.1.0 ended before it applied the ruleset"))
		Expect(exe() + selfupdate.StagedSuffix).NotTo(BeAnExistingFile())
		u.Offer(context.Background(), &rel)
		Expect(u.Status().State).To(Equal(selfupdate.StateRolledBack))

		By("taking another release")
		other := publish(srv, priv, "agent2", "v1.2.0", []byte("newer binary"))
		u.Offer(context.Background(), &other)
		Eventually(func() string { return u.Status().Message }).Should(Equal("verified; switching to it"))
	})
})

var _ = Describe("the watchdog", func() {
	var dir string
	BeforeEach(func() { dir = GinkgoT().TempDir() })

	watch := func(st *selfupdate.State) (exe string, args []string) {
		path := filepath.Join(dir, "state.json")
		Expect(selfupdate.WriteState(path, st)).To(Succeed())
		Expect(selfupdate.Watch(context.Background(), path, slog.New(slog.NewTextHandler(io.Discard, nil)), func(e string, a []string) error {
			exe, args = e, a
			return nil
		})).To(Succeed())
		return exe, args
	}

	It("rolls back when the new version stops running", func() {
		Expect(os.WriteFile(filepath.Join(dir, "staged"), []byte("x"), 0o755)).To(Succeed())
		self, err := os.Executable()
		Expect(err).NotTo(HaveOccurred())
		cmd := exec.Command(self, "-test.run=^$")
		Expect(cmd.Run()).To(Succeed())
		now := time.Now()
		exe, args := watch(&selfupdate.State{Phase: selfupdate.PhaseTrying, Version: "v2", Executable: "/old", Staged: filepath.Join(dir, "staged"),
			Args: []string{"--config", "c"}, PID: cmd.Process.Pid, Since: now, Deadline: now.Add(time.Hour)})
		Expect(exe).To(Equal("/old"))
		Expect(args).To(Equal([]string{"--config", "c"}))
		st := readState(filepath.Join(dir, "state.json"))
		Expect(st.Phase).To(Equal(selfupdate.PhaseFailed))
		Expect(st.Message).To(Equal("rolled back: v2 stopped running before it applied the ruleset"))
		Expect(filepath.Join(dir, "staged")).NotTo(BeAnExistingFile())
	})

	It("kills and rolls back a new version that does not apply by the deadline", func() {
		// A copy of the test binary plays the staged version: the rollback
		// removes what it ran, which must never be a file outside the test's.
		self, err := os.Executable()
		Expect(err).NotTo(HaveOccurred())
		data, err := os.ReadFile(self)
		Expect(err).NotTo(HaveOccurred())
		sleep := filepath.Join(dir, "staged-sleeper")
		Expect(os.WriteFile(sleep, data, 0o755)).To(Succeed())
		cmd := exec.Command(sleep)
		cmd.Env = append(os.Environ(), sleepEnv+"=true")
		Expect(cmd.Start()).To(Succeed())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		now := time.Now()
		exe, _ := watch(&selfupdate.State{Phase: selfupdate.PhaseTrying, Version: "v2", Executable: "/old", Staged: sleep,
			PID: cmd.Process.Pid, Since: now, Deadline: now.Add(500 * time.Millisecond)})
		Expect(exe).To(Equal("/old"))
		Eventually(done).Should(Receive(MatchError(ContainSubstring("killed"))))
		Expect(readState(filepath.Join(dir, "state.json")).Message).To(Equal("rolled back: v2 did not apply the ruleset within 1s"))
		Expect(sleep).NotTo(BeAnExistingFile(), "the staged version is gone")
		Expect(self).To(BeAnExistingFile())
	})

	It("ends without a restart when the new version installed itself", func() {
		now := time.Now()
		path := filepath.Join(dir, "state.json")
		st := &selfupdate.State{Phase: selfupdate.PhaseTrying, Version: "v2", PID: os.Getpid(), Executable: os.Args[0], Since: now, Deadline: now.Add(time.Hour)}
		Expect(selfupdate.WriteState(path, st)).To(Succeed())
		go func() {
			defer GinkgoRecover()
			time.Sleep(300 * time.Millisecond)
			st.Phase = selfupdate.PhaseHealthy
			Expect(selfupdate.WriteState(path, st)).To(Succeed())
		}()
		restarted := false
		Expect(selfupdate.Watch(context.Background(), path, slog.New(slog.NewTextHandler(io.Discard, nil)), func(string, []string) error {
			restarted = true
			return nil
		})).To(Succeed())
		Expect(restarted).To(BeFalse())
	})
})
