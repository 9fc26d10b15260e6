// Package imagebuild builds the project's container images without a Docker
// engine: static Go binaries on an empty base, written as OCI image layouts
// and loadable tarballs that are the same bytes for the same source.
package imagebuild

import (
	"fmt"
	"strings"
)

// module is the import path every binary's package lives under.
const module = "github.com/metal-firewall/gardener-extension-firewall"

// Binary is one of the project's commands that ships as a binary and an image.
type Binary struct {
	// Name is the command's and its image's name.
	Name string
	// Package is the command's import path.
	Package string
	// VersionVar is the variable that -ldflags -X sets to the version; its
	// command prints it for --version.
	VersionVar string
}

// Binaries are the commands shipped as images.
var Binaries = []Binary{
	binary("gardener-extension-firewall"),
	binary("gardener-extension-firewall-admission"),
	binary("firewall-agent"),
}

// Every command keeps its version in <command>/app.Version.
func binary(name string) Binary {
	return Binary{Name: name, Package: module + "/cmd/" + name, VersionVar: module + "/cmd/" + name + "/app.Version"}
}

// Lookup returns the binaries with these names, in the given order.
func Lookup(names ...string) ([]Binary, error) {
	var out []Binary
	for _, n := range names {
		found := false
		for _, b := range Binaries {
			if b.Name == n {
				out = append(out, b)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown binary %q; known: %s", n, strings.Join(binaryNames(), ", "))
		}
	}
	return out, nil
}

func binaryNames() []string {
	out := make([]string, 0, len(Binaries))
	for _, b := range Binaries {
		out = append(out, b.Name)
	}
	return out
}
