package testenv

import (
	"os"
	"path/filepath"
	"time"
)

// controllers are the kube-controller-manager controllers the firewall credentials
// rely on or must withstand: signing and cleaning up CSRs; csrapproving, which
// auto-approves kubelet client CSRs on every Gardener seed (the tests show no
// firewall credential passes it); the garbage collector, which removes each
// firewall's own ClusterRole with its binding; and the bootstrap token cleaner.
const controllers = "csrsigning,csrcleaner,csrapproving,garbagecollector,tokencleaner"

func (c *ControlPlane) startControllerManager(assets string, signingDuration time.Duration, serviceAccountTokens bool) error {
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
	enabled := controllers
	var tokenFlags []string
	if serviceAccountTokens {
		// Signed with the key whose public half kube-apiserver verifies
		// ServiceAccount tokens with (envtest's sa-signer).
		enabled += ",serviceaccount-token"
		tokenFlags = []string{"--service-account-private-key-file=" + filepath.Join(c.env.ControlPlane.APIServer.CertDir, "sa-signer.key"),
			"--root-ca-file=" + filepath.Join(c.env.ControlPlane.APIServer.CertDir, "apiserver.crt")}
	}
	p, err := StartProcess(filepath.Join(assets, "kube-controller-manager"), filepath.Join(kcmDir, "log"), nil, append([]string{
		"--kubeconfig=" + kubeconfigFile,
		"--controllers=" + enabled,
		"--cluster-signing-kube-apiserver-client-cert-file=" + c.ca.certFile,
		"--cluster-signing-kube-apiserver-client-key-file=" + c.ca.keyFile,
		// Kubelet client certificates too, as on a real seed: the attack tests
		// show one signed for a bootstrap token and none for a firewall.
		"--cluster-signing-kubelet-client-cert-file=" + c.ca.certFile,
		"--cluster-signing-kubelet-client-key-file=" + c.ca.keyFile,
		"--cluster-signing-duration=" + signingDuration.String(),
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
	}, tokenFlags...)...)
	if err != nil {
		return err
	}
	c.kcm = p
	return nil
}
