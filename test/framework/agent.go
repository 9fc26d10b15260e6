package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/metal-firewall/gardener-extension-firewall/test/testenv"
)

// BuildAgent builds firewall-agent from this tree into dir, statically, as
// machines run it (the local provider runs it chrooted into the machine's
// root, where no libc is).
func BuildAgent(dir string) (string, error) {
	return BuildAgentVersion(dir, "")
}

// BuildAgentVersion builds the agent as BuildAgent does, saying it is
// version (--version, what it reports and compares for its self-update).
func BuildAgentVersion(dir, version string) (string, error) {
	path := filepath.Join(dir, "firewall-agent")
	args := []string{"build", "-o", path}
	if version != "" {
		args = append(args, "-ldflags", "-X github.com/metal-firewall/gardener-extension-firewall/cmd/firewall-agent/app.Version="+version)
	}
	build := exec.Command("go", append(args, "./cmd/firewall-agent")...)
	build.Dir = testenv.RepoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building firewall-agent: %w\n%s", err, out)
	}
	return path, nil
}

// RunInBackground runs run (an agent's Run, say) until stop cancels its
// context. stop waits for run to return and returns its error; a second call
// returns the same, so a spec may stop it and still defer stop. It takes the
// function, not the agent, so that the suites importing this package (the
// Istio one among them) do not link the agent.
func RunInBackground(run func(context.Context) error) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
}
