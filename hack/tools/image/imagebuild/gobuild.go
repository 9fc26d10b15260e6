package imagebuild

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// GoBuild compiles binaries for one platform.
type GoBuild struct {
	Binaries []Binary
	Platform v1.Platform
	// Version is written into every binary's VersionVar.
	Version string
	// OutDir receives one file per binary, named after it.
	OutDir string
	// Stderr receives the go command's output; os.Stderr if nil.
	Stderr io.Writer
}

// Run builds all binaries in one go command, so that shared packages are
// compiled once. The flags make the result static and reproducible:
//   - CGO_ENABLED=0: no libc, so the binary runs on the empty image base and
//     on any firewall OS;
//   - -trimpath, -buildvcs=false: the bytes do not depend on where the source
//     lies or on the state of .git (the revision is an image label instead);
//   - -buildid= (empty): the Go build ID holds the link's action ID, which was
//     seen to differ between a cold and a warm build cache for the very same
//     bytes otherwise (and the ELF GNU build ID is derived from it);
//   - -s -w: no symbol table and DWARF, which only make the image bigger.
//
// It returns the path of each binary by name.
func (b GoBuild) Run(ctx context.Context) (map[string]string, error) {
	if b.Platform.Variant != "" || b.Platform.OS == "" || b.Platform.Architecture == "" {
		return nil, fmt.Errorf("platform %q: only <os>/<arch> is supported", b.Platform.String())
	}
	if len(b.Binaries) == 0 {
		return nil, fmt.Errorf("no binaries to build")
	}
	if err := os.MkdirAll(b.OutDir, 0o750); err != nil {
		return nil, err
	}
	ldflags := []string{"-s", "-w", "-buildid="}
	args := []string{"build", "-trimpath", "-buildvcs=false"}
	var pkgs []string
	paths := map[string]string{}
	for _, bin := range b.Binaries {
		ldflags = append(ldflags, "-X", bin.VersionVar+"="+b.Version)
		pkgs = append(pkgs, bin.Package)
		paths[bin.Name] = filepath.Join(b.OutDir, bin.Name)
	}
	// `-o dir/` names each binary after its package's last element, which is
	// the binary's name.
	args = append(args, "-ldflags", strings.Join(ldflags, " "), "-o", b.OutDir+string(filepath.Separator))
	args = append(args, pkgs...)

	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+b.Platform.OS, "GOARCH="+b.Platform.Architecture)
	cmd.Stdout = b.stderr()
	cmd.Stderr = b.stderr()
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s (GOOS=%s GOARCH=%s): %w", strings.Join(args, " "), b.Platform.OS, b.Platform.Architecture, err)
	}
	return paths, nil
}

func (b GoBuild) stderr() io.Writer {
	if b.Stderr != nil {
		return b.Stderr
	}
	return os.Stderr
}
