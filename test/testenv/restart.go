package testenv

import "fmt"

// StopAPIServer stops the kube-apiserver alone, as a crash or an outage of
// the seed's control plane does; etcd and the controller manager keep
// running. StartAPIServer brings it back.
func (c *ControlPlane) StopAPIServer() error {
	if err := c.env.ControlPlane.APIServer.Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver of %q: %w", c.Name, err)
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
