package localsetup_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

func TestLocalSetup(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Test Integration Local Setup Suite")
}

var (
	// tools holds skaffold and kustomize, built from the module proxy.
	tools string
	// gardenerDir is Gardener's module at the version go.mod pins.
	gardenerDir    string
	runtimeCluster *testenv.ControlPlane
	runtimeC       client.Client
)

var _ = BeforeSuite(func() {
	root := testenv.RepoRoot()
	out, err := run(root, filepath.Join(root, "hack/build-skaffold.sh"))
	Expect(err).NotTo(HaveOccurred(), out)
	tools = strings.TrimSpace(lastLine(out))

	out, err = run(root, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/gardener/gardener")
	Expect(err).NotTo(HaveOccurred(), out)
	gardenerDir = strings.TrimSpace(out)

	// The runtime cluster of Gardener's local setup, with gardener-operator's own
	// Extension CRD (from Gardener's module, not ours).
	crds, err := os.MkdirTemp("", "localsetup-crds-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, crds)
	crd, err := os.ReadFile(filepath.Join(gardenerDir, "example/operator/10-crd-operator.gardener.cloud_extensions.yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(crds, "extensions.yaml"), crd, 0o600)).To(Succeed())
	runtimeCluster, err = testenv.Start(testenv.Options{Name: "runtime", CRDDirectoryPaths: []string{crds}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(runtimeCluster.Stop()).To(Succeed()) })
	runtimeC, err = client.New(runtimeCluster.Config, client.Options{Scheme: scheme()})
	Expect(err).NotTo(HaveOccurred())
})

// run runs a command in dir and returns its output (stdout and stderr).
func run(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SKAFFOLD_UPDATE_CHECK=false", "SKAFFOLD_INTERACTIVE=false")
	if tools != "" {
		cmd.Env = append(cmd.Env, "PATH="+tools+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

var ctx = context.Background()
