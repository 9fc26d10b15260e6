package selfupdate

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// WatchdogCommand is the hidden subcommand of the agent that watches a
// trial; it runs the old, known-good binary.
const WatchdogCommand = "selfupdate-watchdog"

// watchdogPoll is how often the watchdog looks at the state and the process.
const watchdogPoll = 200 * time.Millisecond

// Watch watches the trial the state file at path describes, as a process of
// its own started by the old version just before it re-executes into the
// new one: when the new version exits (crashes) or has not applied the
// ruleset by the deadline (then it is killed), the trial is marked failed,
// the staged binary removed, and the old version started again with the
// agent's arguments through restart (exec), unless a service manager
// (systemd) restarts the agent itself. Watch returns when the trial ended
// either way.
func Watch(ctx context.Context, path string, log *slog.Logger, restart func(executable string, args []string) error) error {
	first, err := ReadState(path)
	if err != nil || first == nil || first.Phase != PhaseTrying {
		return err
	}
	t := time.NewTicker(watchdogPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		st, err := ReadState(path)
		if err != nil {
			return err
		}
		if st == nil || st.Phase != PhaseTrying || !st.Since.Equal(first.Since) {
			return nil
		}
		reason := ""
		switch {
		case !runs(st.PID, st.Staged, st.Executable):
			reason = fmt.Sprintf("%s stopped running before it applied the ruleset", st.Version)
		case time.Now().After(st.Deadline):
			reason = fmt.Sprintf("%s did not apply the ruleset within %s", st.Version, st.Deadline.Sub(st.Since).Round(time.Second))
		default:
			continue
		}
		st.Phase, st.Message = PhaseFailed, "rolled back: "+reason
		if err := WriteState(path, st); err != nil {
			return err
		}
		// Killed hard: a version on trial that failed has nothing to save,
		// and the table stays in the kernel anyway.
		if runs(st.PID, st.Staged, st.Executable) {
			_ = syscall.Kill(st.PID, syscall.SIGKILL)
		}
		_ = os.Remove(st.Staged)
		log.Error("the new agent version failed its trial; rolled back", "version", st.Version, "reason", reason, "running", st.From)
		if os.Getenv("INVOCATION_ID") != "" {
			// systemd runs the agent: it restarts the installed (old) binary.
			return nil
		}
		return restart(st.Executable, st.Args)
	}
}

// runs tells whether pid is a live process running one of binaries (the old
// version until it re-executes, then the new one); a zombie, a vanished
// process or another program with the pid does not count.
func runs(pid int, binaries ...string) bool {
	if pid <= 0 {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses, which may hold blanks.
	if i := strings.LastIndexByte(string(stat), ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X' {
		return false
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return false
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	return slices.Contains(binaries, exe)
}
