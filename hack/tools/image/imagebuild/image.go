package imagebuild

import (
	"fmt"
	"os"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Metadata describes the source an image was built from.
type Metadata struct {
	Version  string
	Revision string
	// Source is the repository's URL.
	Source string
	// Created is the time written into the image, its history and every file
	// (SOURCE_DATE_EPOCH): a fixed time, so the digest depends only on the
	// source.
	Created time.Time
}

// Labels are the OCI annotations that registries and scanners read from the
// config.
func (m Metadata) Labels(name string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    name,
		"org.opencontainers.image.source":   m.Source,
		"org.opencontainers.image.revision": m.Revision,
		"org.opencontainers.image.version":  m.Version,
	}
}

// Image returns one platform's image of a binary: the base files, then the
// binary at /<name> (owned by root, so the non-root process cannot replace it)
// as its own layer, run as UID/GID 65532.
func Image(bin Binary, binaryPath string, platform v1.Platform, meta Metadata) (v1.Image, error) {
	content, err := os.ReadFile(binaryPath)
	if err != nil {
		return nil, err
	}
	base, err := Layer(BaseFiles(), meta.Created)
	if err != nil {
		return nil, err
	}
	app, err := Layer([]File{{Path: bin.Name, Mode: 0o755, Content: content}}, meta.Created)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: meta.Created.UTC()}

	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "imagebuild: /etc/passwd, /etc/group, /home/nonroot, /tmp"}},
		mutate.Addendum{Layer: app, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "imagebuild: /" + bin.Name}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS = platform.OS
	cf.Architecture = platform.Architecture
	cf.Created = created
	uid := strconv.Itoa(NonRootUID)
	cf.Config.User = uid + ":" + uid
	cf.Config.Entrypoint = []string{"/" + bin.Name}
	cf.Config.WorkingDir = "/"
	cf.Config.Labels = meta.Labels(bin.Name)
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image %s %s: %w", bin.Name, platform.String(), err)
	}
	return img, nil
}
