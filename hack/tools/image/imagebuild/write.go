package imagebuild

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Outputs are the files Write produced for one image.
type Outputs struct {
	// Layout is the OCI image layout folder; its index.json names the image
	// index.
	Layout string
	// OCIArchive is Layout as a tar (ctr images import, podman load).
	OCIArchive string
	// DockerArchives are `docker save` tarballs, one per platform (crane push,
	// docker/podman load), by platform.
	DockerArchives map[string]string
	// Digest is the image index's digest: what a registry serves for the tag.
	Digest v1.Hash
}

// Write replaces dir with the image's outputs: dir/oci (layout),
// dir/<name>.oci.tar, dir/<name>-<os>-<arch>.docker.tar and dir/digest.
// Files are written with mtime so that the archives are reproducible.
func Write(dir, imageName string, tag name.Tag, images []PlatformImage, mtime time.Time) (Outputs, error) {
	// A former build's blobs would stay in the layout otherwise.
	if err := os.RemoveAll(dir); err != nil {
		return Outputs{}, err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return Outputs{}, err
	}
	idx := Index(images)
	digest, err := idx.Digest()
	if err != nil {
		return Outputs{}, err
	}
	out := Outputs{
		Layout:         filepath.Join(dir, "oci"),
		OCIArchive:     filepath.Join(dir, imageName+".oci.tar"),
		DockerArchives: map[string]string{},
		Digest:         digest,
	}

	// index.json points at the image index, named by the reference: the OCI
	// annotation for skopeo/podman, containerd's for ctr images import.
	top := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), mutate.IndexAddendum{
		Add: idx,
		Descriptor: v1.Descriptor{Annotations: map[string]string{
			"org.opencontainers.image.ref.name": tag.String(),
			"io.containerd.image.name":          tag.String(),
		}},
	})
	if _, err := layout.Write(out.Layout, top); err != nil {
		return Outputs{}, fmt.Errorf("OCI layout: %w", err)
	}
	if err := writeFile(out.OCIArchive, func(f *os.File) error { return TarDir(out.Layout, f, mtime) }); err != nil {
		return Outputs{}, fmt.Errorf("OCI archive: %w", err)
	}
	for _, pi := range images {
		p := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.docker.tar", imageName, pi.Platform.OS, pi.Platform.Architecture))
		if err := tarball.WriteToFile(p, tag, pi.Image); err != nil {
			return Outputs{}, fmt.Errorf("docker archive %s: %w", pi.Platform.String(), err)
		}
		out.DockerArchives[pi.Platform.String()] = p
	}
	if err := os.WriteFile(filepath.Join(dir, "digest"), []byte(digest.String()+"\n"), 0o644); err != nil { //nolint:gosec // a public digest
		return Outputs{}, err
	}
	return out, nil
}

func writeFile(p string, write func(*os.File) error) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
