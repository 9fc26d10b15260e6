package framework

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// BuildAgent builds firewall-agent from this tree into dir, statically, as
// machines run it (the local provider runs it chrooted into the machine's
// root, where no libc is).
func BuildAgent(dir string) (string, error) {
	path := filepath.Join(dir, "firewall-agent")
	build := exec.Command("go", "build", "-o", path, "./cmd/firewall-agent")
	build.Dir = testenv.RepoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building firewall-agent: %w\n%s", err, out)
	}
	return path, nil
}
