package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/metal-firewall/gardener-extension-firewall/test/lab"
)

// controlPlaneBinaries are the processes testenv starts; they are matched
// by name and by the run's folder in their arguments.
var controlPlaneBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager"}

const netnsDir = "/var/run/netns"

// sweep removes what demo runs left on the host, or only run r's: a demo
// program still running (it cleans up after itself on SIGTERM), then the
// control-plane processes and firewall agents, the network namespaces
// (which takes their veth links with them) and the folders. It says what it
// removes and returns how many things it found; an error names what is
// left.
func sweep(r run, say func(format string, args ...any)) (int, error) {
	found := 0
	for _, d := range demoDirs(r) {
		if pid, ok := runningDemo(d); ok {
			found++
			say("stopping the demo program still running (pid %d); it cleans up after itself", pid)
			stopProcess(pid, 90*time.Second)
		}
	}

	pids := leftoverProcesses(r)
	for _, p := range pids {
		found++
		say("stopping %s (pid %d)", p.what, p.pid)
	}
	for _, p := range pids {
		stopProcess(p.pid, 10*time.Second)
	}

	for _, ns := range demoNetNS(r) {
		found++
		// Whatever still runs inside dies with the agents' session or here.
		if out, err := exec.Command("ip", "netns", "pids", ns).Output(); err == nil {
			for _, f := range strings.Fields(string(out)) {
				if pid, err := strconv.Atoi(f); err == nil {
					say("stopping process %d in network namespace %s", pid, ns)
					stopProcess(pid, 5*time.Second)
				}
			}
		}
		say("removing network namespace %s and the veth links in it", ns)
		if out, err := exec.Command("ip", "netns", "delete", ns).CombinedOutput(); err != nil {
			say("  could not: %v: %s", err, strings.TrimSpace(string(out)))
		}
	}

	if removed, err := lab.RemoveLeftovers(); err != nil {
		say("could not remove what a lab left: %v", err)
	} else if removed != "" {
		found++
		say("removed what a lab left: %s", removed)
	}

	for _, d := range demoDirs(r) {
		found++
		say("removing folder %s", d)
		if err := os.RemoveAll(d); err != nil {
			say("  could not: %v", err)
		}
	}
	return found, leftovers(r)
}

// leftovers names what is still there after a sweep.
func leftovers(r run) error {
	var errs []error
	for _, p := range leftoverProcesses(r) {
		errs = append(errs, fmt.Errorf("%s (pid %d) still runs", p.what, p.pid))
	}
	for _, ns := range demoNetNS(r) {
		errs = append(errs, fmt.Errorf("network namespace %s still exists", ns))
	}
	for _, d := range demoDirs(r) {
		errs = append(errs, fmt.Errorf("folder %s still exists", d))
	}
	return errors.Join(errs...)
}

// demoDirs are the runs' folders in the temp dir.
func demoDirs(r run) []string {
	entries, _ := os.ReadDir(r.base)
	var out []string
	for _, e := range entries {
		if e.IsDir() && r.owns(e.Name()) {
			out = append(out, filepath.Join(r.base, e.Name()))
		}
	}
	return out
}

// demoNetNS are the runs' named network namespaces.
func demoNetNS(r run) []string {
	entries, _ := os.ReadDir(netnsDir)
	var out []string
	for _, e := range entries {
		if r.owns(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

type process struct {
	pid  int
	what string
}

// leftoverProcesses are the control-plane processes started with a run's
// folder, and the firewall agents chrooted into a machine below it.
func leftoverProcesses(r run) []process {
	dirs := demoDirs(r)
	if len(dirs) == 0 {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var out []process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if root, err := os.Readlink(fmt.Sprintf("/proc/%d/root", pid)); err == nil && below(root, dirs) {
			out = append(out, process{pid, "firewall-agent of a demo machine"})
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || !isControlPlaneBinary(filepath.Base(exe)) && filepath.Base(exe) != "qemu-system-x86_64" {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		for _, d := range dirs {
			if strings.Contains(string(cmdline), d+"/") {
				what := filepath.Base(exe) + " of a demo control plane"
				if filepath.Base(exe) == "qemu-system-x86_64" {
					what = "the lab's virtual machine of a demo"
				}
				out = append(out, process{pid, what})
				break
			}
		}
	}
	return out
}

func isControlPlaneBinary(name string) bool {
	for _, b := range controlPlaneBinaries {
		if name == b {
			return true
		}
	}
	return false
}

func below(path string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}

// pidFile holds the demo program's pid and start time, so that a sweep
// stops a demo still running and never a process that got its pid later.
const pidFile = "demo.pid"

func writePIDFile(dir string) error {
	start, err := startTime(os.Getpid())
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, pidFile), []byte(fmt.Sprintf("%d %s\n", os.Getpid(), start)), 0o600)
}

func runningDemo(dir string) (int, bool) {
	data, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		return 0, false
	}
	var pid int
	var start string
	if _, err := fmt.Sscan(string(data), &pid, &start); err != nil || pid == os.Getpid() {
		return 0, false
	}
	now, err := startTime(pid)
	return pid, err == nil && now == start
}

// startTime is field 22 of /proc/<pid>/stat, the process's start time.
func startTime(pid int) (string, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// The command name (field 2) may hold spaces; it ends at the last ')'.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 20 {
		return "", fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	return fields[19], nil
}

// stopProcess sends SIGTERM and, after the grace period, SIGKILL.
func stopProcess(pid int, grace time.Duration) {
	if syscall.Kill(pid, syscall.SIGTERM) != nil {
		return
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 50 && alive(pid); i++ {
		time.Sleep(100 * time.Millisecond)
	}
}

// alive is false for gone and for zombie processes (a zombie of this
// program's own children is reaped by their Wait).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z"
}
