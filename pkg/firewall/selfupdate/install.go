package selfupdate

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/atomicfile"
)

// Suffixes of the files beside the installed binary.
const (
	// StagedSuffix names the verified new version, run on trial from there.
	StagedSuffix = ".new"
	// PreviousSuffix names the version before the last installed one.
	PreviousSuffix = ".previous"
)

// StablePath is the installed binary's path for a process running from
// path: a version on trial runs from the staged file beside it.
func StablePath(path string) string {
	return strings.TrimSuffix(path, StagedSuffix)
}

// install makes the staged binary the installed one: the installed binary
// is kept as executable.previous (replacing an older one), then the staged
// file is renamed over executable, an atomic switch: at every moment the
// path holds a complete, working binary.
func install(executable, staged string) error {
	previous := executable + PreviousSuffix
	if err := os.Remove(previous); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("removing the old %s: %w", previous, err)
	}
	if err := os.Link(executable, previous); err != nil {
		// Another file system or no hard links: a synced copy.
		if err := copyFile(executable, previous); err != nil {
			return fmt.Errorf("keeping %s as %s: %w", executable, previous, err)
		}
	}
	if err := os.Rename(staged, executable); err != nil {
		return fmt.Errorf("installing %s as %s: %w", staged, executable, err)
	}
	return atomicfile.SyncDir(filepath.Dir(executable))
}

func copyFile(from, to string) error {
	in, err := os.Open(from) //nolint:gosec // the agent's own binary
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755) //nolint:gosec // a binary: executable
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
