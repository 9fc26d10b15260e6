package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// KillAPIServer kills the kube-apiserver alone with SIGKILL, as a crash of
// the seed's control plane does; etcd and the controller manager keep
// running. StartAPIServer brings it back.
func (c *ControlPlane) KillAPIServer() error {
	apiServer := c.env.ControlPlane.APIServer
	pid, err := pidWithArgument("kube-apiserver", apiServer.CertDir)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing kube-apiserver of %q: %w", c.Name, err)
	}
	// envtest reaps it; then its Stop has nothing left to wait for.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver of %q (pid %d) still there 10s after SIGKILL", c.Name, pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if err := apiServer.Stop(); err != nil {
		return fmt.Errorf("cleaning up after kube-apiserver of %q: %w", c.Name, err)
	}
	return nil
}

// StartAPIServer starts the kube-apiserver again on the same address, with
// the same serving certificate and client CA, on the same etcd: to its
// clients, the server is back as it was.
func (c *ControlPlane) StartAPIServer() error {
	if err := c.env.ControlPlane.APIServer.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver of %q again: %w", c.Name, err)
	}
	return nil
}

// pidWithArgument finds the process of the named binary whose command line
// holds arg (a folder only this control plane uses).
func pidWithArgument(binary, arg string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := bytes.Split(cmdline, []byte{0})
		if len(args) > 0 && filepath.Base(string(args[0])) == binary && bytes.Contains(cmdline, []byte(arg)) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no %s process with %q in its command line", binary, arg)
}

// Pids are the process IDs of the kube-apiserver and etcd: benchmarks read their CPU time.
func (c *ControlPlane) Pids() (apiServer, etcd int, err error) {
	if apiServer, err = pidWithArgument("kube-apiserver", c.env.ControlPlane.APIServer.CertDir); err != nil {
		return 0, 0, err
	}
	etcd, err = pidWithArgument("etcd", c.env.ControlPlane.Etcd.DataDir)
	return apiServer, etcd, err
}
