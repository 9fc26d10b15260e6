package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// controllers are the kube-controller-manager controllers the firewall credentials
// rely on or must withstand: signing and cleaning up CSRs; csrapproving, which
// auto-approves kubelet client CSRs on every Gardener seed (the tests show no
// firewall credential passes it); the garbage collector, which removes each
// firewall's own ClusterRole with its binding; and the bootstrap token cleaner.
const controllers = "csrsigning,csrcleaner,csrapproving,garbagecollector,tokencleaner"

func (c *ControlPlane) startControllerManager(assets string, signingDuration time.Duration) error {
	if signingDuration == 0 {
		signingDuration = time.Hour
	}
	cfg, err := c.AddUser("system:kube-controller-manager", "system:masters")
	if err != nil {
		return err
	}
	kubeconfig, err := Kubeconfig(cfg)
	if err != nil {
		return err
	}
	kcmDir := filepath.Join(c.Dir, "kube-controller-manager")
	if err := os.MkdirAll(kcmDir, 0o700); err != nil {
		return err
	}
	kubeconfigFile := filepath.Join(kcmDir, "kubeconfig")
	if err := os.WriteFile(kubeconfigFile, kubeconfig, 0o600); err != nil {
		return err
	}
	p, err := startProcess(filepath.Join(assets, "kube-controller-manager"), filepath.Join(kcmDir, "log"),
		"--kubeconfig="+kubeconfigFile,
		"--controllers="+controllers,
		"--cluster-signing-kube-apiserver-client-cert-file="+c.ca.certFile,
		"--cluster-signing-kube-apiserver-client-key-file="+c.ca.keyFile,
		// Kubelet client certificates too, as on a real seed: the attack tests
		// show one signed for a bootstrap token and none for a firewall.
		"--cluster-signing-kubelet-client-cert-file="+c.ca.certFile,
		"--cluster-signing-kubelet-client-key-file="+c.ca.keyFile,
		"--cluster-signing-duration="+signingDuration.String(),
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
	)
	if err != nil {
		return err
	}
	c.kcm = p
	return nil
}

// process is a child process whose output goes to a log file.
type process struct {
	cmd     *exec.Cmd
	logFile string
	done    chan error
}

func startProcess(path, logFile string, args ...string) (*process, error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	// Die with the test process, even when it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := startFromLastingThread(cmd); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	p := &process{cmd: cmd, logFile: logFile, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); _ = log.Close() }()

	// A process that exits within its first seconds is misconfigured: say so with its log.
	select {
	case err := <-p.done:
		out, _ := os.ReadFile(logFile)
		return nil, fmt.Errorf("%s exited at start (%w):\n%s", filepath.Base(path), err, out)
	case <-time.After(2 * time.Second):
		return p, nil
	}
}

// The kernel sends Pdeathsig when the thread that forked the child exits,
// not the process; and Go ends a thread when a goroutine that locked it
// exits, as netns.NS.Do does after entering a namespace. A child forked on
// such a thread was killed at a random later moment (a seed's
// kube-controller-manager stopped signing CSRs mid-test). So children are
// forked on one thread that stays locked, and lives, as long as the process.
var (
	forkOnce sync.Once
	forks    = make(chan func())
)

func startFromLastingThread(cmd *exec.Cmd) error {
	forkOnce.Do(func() {
		go func() {
			runtime.LockOSThread()
			for f := range forks {
				f()
			}
		}()
	})
	errc := make(chan error, 1)
	forks <- func() { errc <- cmd.Start() }
	return <-errc
}

func (p *process) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop on SIGTERM, killed (log %s)", p.cmd.Path, p.logFile)
	}
}
