package testenv

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// envtest starts etcd and kube-apiserver without a death signal: a test
// process killed before its cleanup (a go test timeout, SIGQUIT) left them
// running. A watchdog shell waits on a pipe from this process: when the
// process dies, however, the pipe closes and the shell kills them.
type watchdog struct {
	cmd  *exec.Cmd
	pipe io.WriteCloser
}

// envtestProcesses are the command names of what envtest starts.
var envtestProcesses = []string{"etcd", "kube-apiserver"}

// children are the PIDs of this process's children named one of names.
func children(names ...string) map[int]bool {
	out := map[int]bool{}
	self := os.Getpid()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		data, err := os.ReadFile(path) //nolint:gosec // procfs
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(string(data[end+1:]))
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		pid, _ := strconv.Atoi(strings.TrimSpace(string(data[:open])))
		comm := string(data[open+1 : end])
		for _, n := range names {
			if ppid == self && comm == n {
				out[pid] = true
			}
		}
	}
	return out
}

// watch starts a watchdog over the children that are in after but not in
// before.
func watch(before, after map[int]bool) (*watchdog, error) {
	var pids []string
	for pid := range after {
		if !before[pid] {
			pids = append(pids, strconv.Itoa(pid))
		}
	}
	if len(pids) == 0 {
		return nil, nil
	}
	cmd := exec.Command("/bin/sh", "-c", "read -r _; kill -9 "+strings.Join(pids, " ")+" 2>/dev/null")
	pipe, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the control plane's watchdog: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	return &watchdog{cmd: cmd, pipe: pipe}, nil
}

// stop ends the watchdog without its trap: the control plane stopped by
// itself, and its PIDs may be reused.
func (w *watchdog) stop() {
	if w != nil {
		_ = w.cmd.Process.Kill()
		_ = w.pipe.Close()
	}
}
