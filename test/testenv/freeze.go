package testenv

import (
	"fmt"
	"syscall"
)

// FreezeAPIServer stops the kube-apiserver (SIGSTOP): the kernel still
// accepts connections on its port and takes the requests written on open
// ones, and nothing ever answers, as with a server that hangs. The returned
// thaw (SIGCONT) must run before Stop, which cannot end a stopped process
// with SIGTERM; it may run more than once.
func (c *ControlPlane) FreezeAPIServer() (thaw func() error, err error) {
	pid, err := pidWithArgument("kube-apiserver", c.env.ControlPlane.APIServer.CertDir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("stopping kube-apiserver of %q: %w", c.Name, err)
	}
	return func() error {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && err != syscall.ESRCH {
			return fmt.Errorf("continuing kube-apiserver of %q: %w", c.Name, err)
		}
		return nil
	}, nil
}
