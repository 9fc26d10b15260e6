package framework

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// ExtensionProcess is the extension binary running in a process of its own, as the chart runs
// it: benchmarks read its memory and CPU from the kernel, apart from the test's.
type ExtensionProcess struct {
	cmd *exec.Cmd
	log *os.File
	// LogFile holds the process's output.
	LogFile string
}

// BuildExtension builds cmd/gardener-extension-firewall of this tree into dir.
func BuildExtension(dir string) (string, error) {
	binary := filepath.Join(dir, "gardener-extension-firewall")
	build := exec.Command("go", "build", "-o", binary, "./cmd/gardener-extension-firewall")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the extension: %w: %s", err, out)
	}
	return binary, nil
}

// StartExtensionProcess runs binary against the control plane as the chart does with one
// replica (no leader election, no probes or metrics served, no webhook), with its boot
// namespace, writing its output into dir/extension.log. args are further flags.
func StartExtensionProcess(ctx context.Context, binary, dir string, cp *testenv.ControlPlane, args ...string) (*ExtensionProcess, error) {
	kubeconfig, err := testenv.Kubeconfig(cp.Config)
	if err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{"kubeconfig": kubeconfig, "ca.crt": cp.CACertificate()} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	const bootNamespace = "extension-firewall-bench"
	c, err := SeedClient(cp)
	if err != nil {
		return nil, err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bootNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	p := &ExtensionProcess{LogFile: filepath.Join(dir, "extension.log")}
	if p.log, err = os.Create(p.LogFile); err != nil {
		return nil, err
	}
	p.cmd = exec.Command(binary, append([]string{
		"--kubeconfig=" + filepath.Join(dir, "kubeconfig"), "--leader-election=false", "--metrics-bind-address=0", "--health-bind-address=0",
		"--seed-server=" + cp.Config.Host, "--seed-ca-file=" + filepath.Join(dir, "ca.crt"), "--boot-namespace=" + bootNamespace,
	}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		_ = p.log.Close()
		return nil, err
	}
	return p, nil
}

// Pid is the process's ID.
func (p *ExtensionProcess) Pid() int { return p.cmd.Process.Pid }

// StatusKiB reads a field in KiB of the process's /proc/<pid>/status, such as VmHWM (the
// kernel's peak resident set) or VmRSS; 0 when it cannot be read.
func (p *ExtensionProcess) StatusKiB(field string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		return 0
	}
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return v
		}
	}
	return 0
}

// CPUSeconds is the CPU time the process has used so far.
func (p *ExtensionProcess) CPUSeconds() float64 { return CPUSeconds(p.Pid()) }

// CPUSeconds is the CPU time a process has used so far, user and system (/proc/<pid>/stat, in
// the kernel's clock ticks of 1/100 s); 0 when it cannot be read.
func CPUSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name in parentheses may hold spaces; the fields after it are fixed.
	_, rest, ok := bytes.Cut(data, []byte(") "))
	if !ok {
		return 0
	}
	fields := strings.Fields(string(rest))
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100
}

// Stop kills the process and closes its log; keepLog, when set, receives a copy of the log.
func (p *ExtensionProcess) Stop(keepLog string) {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	_ = p.log.Close()
	if keepLog != "" {
		if data, err := os.ReadFile(p.LogFile); err == nil {
			_ = os.WriteFile(keepLog, data, 0o600)
		}
	}
}
