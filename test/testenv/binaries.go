package testenv

import (
	"fmt"
	"os"
	"path/filepath"
)

// AssetsEnv names the folder holding kube-apiserver, kube-controller-manager and etcd,
// as printed by hack/build-control-plane.sh (the Makefile exports it for `make test`).
const AssetsEnv = "KUBEBUILDER_ASSETS"

// binaryDir returns the folder with the control-plane binaries, or an error that
// tells how to build them: setup-envtest cannot download anything on our machines.
func binaryDir() (string, error) {
	dir := os.Getenv(AssetsEnv)
	if dir == "" {
		return "", fmt.Errorf("%s is not set: run `make test`, or export %s=$(hack/build-control-plane.sh)", AssetsEnv, AssetsEnv)
	}
	for _, bin := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("%s=%s lacks %s: run hack/build-control-plane.sh: %w", AssetsEnv, dir, bin, err)
		}
	}
	return dir, nil
}
