package imagebuild

import (
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// PlatformImage is one platform's image of a binary.
type PlatformImage struct {
	Platform v1.Platform
	Image    v1.Image
}

// Index puts the platforms' images into one OCI image index, also for a single
// platform: the index is what a registry serves under the tag, and its digest
// is the one to pin.
func Index(images []PlatformImage) v1.ImageIndex {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, pi := range images {
		p := pi.Platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        pi.Image,
			Descriptor: v1.Descriptor{Platform: &p},
		})
	}
	return idx
}
