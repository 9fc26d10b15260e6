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

// Process is a child process whose output goes to a log file. It dies with
// the test process, even when that is killed.
type Process struct {
	cmd     *exec.Cmd
	logFile string
	done    chan error
}

// StartProcess starts path with args, and env added to this process's
// environment; a process that exits within its first seconds is an error
// with its log.
func StartProcess(path, logFile string, env []string, args ...string) (*Process, error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	// Die with the test process, even when it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := startFromLastingThread(cmd); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	p := &Process{cmd: cmd, logFile: logFile, done: make(chan error, 1)}
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

// Stop ends the process with SIGTERM, and SIGKILL after 20 s.
func (p *Process) Stop() error {
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
