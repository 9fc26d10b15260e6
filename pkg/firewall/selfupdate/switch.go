package selfupdate

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Switch runs a verified release: it records the trial, starts the watchdog
// and re-executes the process into the staged binary (same pid, so a
// service manager sees the same main process). The nftables table stays in
// the kernel meanwhile. It returns only when the switch failed, having
// recorded why; it does nothing when no release is staged.
func (u *Updater) Switch() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.staged == nil {
		return nil
	}
	rel := *u.staged
	u.staged = nil
	timeout := u.HealthTimeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	now := time.Now()
	st := &State{Phase: PhaseTrying, Version: rel.Version, SHA256: rel.SHA256, From: u.Version, Executable: u.Executable,
		Staged: u.Executable + StagedSuffix, Args: u.Args, PID: os.Getpid(), Since: now, Deadline: now.Add(timeout)}
	fail := func(err error) error {
		st.Phase, st.Message = PhaseFailed, "not switched: "+err.Error()
		_ = WriteState(u.StatePath, st)
		_ = os.Remove(st.Staged)
		u.failed = st
		u.set(StateRolledBack, rel.Version, st.Message)
		return err
	}
	if err := WriteState(u.StatePath, st); err != nil {
		return fail(fmt.Errorf("recording the trial: %w", err))
	}
	start := u.StartWatchdog
	if start == nil {
		start = StartWatchdog
	}
	pid, err := start(u.StatePath, st)
	if err != nil {
		return fail(fmt.Errorf("starting the watchdog: %w", err))
	}
	st.WatchdogPID = pid
	if err := WriteState(u.StatePath, st); err != nil {
		return fail(fmt.Errorf("recording the trial: %w", err))
	}
	u.Log.Info("switching to the new agent version; the ruleset stays in force", "version", rel.Version, "from", u.Version, "healthTimeout", timeout)
	run := u.Exec
	if run == nil {
		run = syscall.Exec
	}
	err = run(st.Staged, append([]string{st.Staged}, u.Args...), os.Environ())
	return fail(fmt.Errorf("executing %s: %w", st.Staged, err))
}

// Applied tells the updater that the ruleset was applied. A version on
// trial is then healthy: it installs itself (the old binary kept as
// .previous) and the watchdog ends.
func (u *Updater) Applied() {
	u.mu.Lock()
	defer u.mu.Unlock()
	st := u.trial
	if st == nil {
		return
	}
	u.trial = nil
	if err := install(st.Executable, st.Staged); err != nil {
		// Running, but not installed: a restart runs the old version, which
		// then reports the trial as failed.
		u.set(StateRolledBack, st.Version, "applied the ruleset but could not install itself: "+err.Error())
		st.Phase, st.Message = PhaseFailed, u.status.Message
		_ = WriteState(u.StatePath, st)
		return
	}
	st.Phase, st.Message = PhaseHealthy, ""
	if err := WriteState(u.StatePath, st); err != nil {
		u.Log.Error("recording the installed version", "error", err)
	}
	u.Executable = st.Executable
	u.set(StateUpToDate, st.Version, "")
	u.Log.Info("the new agent version applied the ruleset and is installed", "version", st.Version,
		"previous", st.Executable+PreviousSuffix)
}

// trialGrace is how long after its deadline a version on trial waits for
// the watchdog before it rolls itself back.
const trialGrace = 5 * time.Second

// trialExpired rolls back a trial that has not applied by its deadline when
// the watchdog did not (it was killed, say): the old binary is started in
// this process's place.
func (u *Updater) trialExpired() {
	u.mu.Lock()
	defer u.mu.Unlock()
	st := u.trial
	if st == nil {
		return
	}
	if cur, err := ReadState(u.StatePath); err != nil || cur == nil || cur.Phase != PhaseTrying || !cur.Since.Equal(st.Since) {
		return
	}
	u.trial = nil
	st.Phase, st.Message = PhaseFailed, fmt.Sprintf("rolled back: %s did not apply the ruleset within %s (rolled back by itself, the watchdog did not act)",
		st.Version, st.Deadline.Sub(st.Since).Round(time.Second))
	_ = WriteState(u.StatePath, st)
	_ = os.Remove(st.Staged)
	u.set(StateRolledBack, st.Version, st.Message)
	run := u.Exec
	if run == nil {
		run = syscall.Exec
	}
	err := run(st.Executable, append([]string{st.Executable}, st.Args...), os.Environ())
	u.Log.Error("self-update: starting the previous version failed; this version runs on", "error", err)
}

// StartWatchdog starts the watchdog of a trial: the installed (old) binary
// with WatchdogCommand, in a session of its own, logging to the agent's
// standard error.
func StartWatchdog(statePath string, st *State) (int, error) {
	cmd := exec.Command(st.Executable, WatchdogCommand, "--state", statePath) //nolint:gosec // the agent's own binary
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	return cmd.Process.Pid, nil
}

type waitStatus = syscall.WaitStatus

func wait4(pid int, ws *waitStatus) (int, error) {
	return syscall.Wait4(pid, ws, 0, nil)
}
